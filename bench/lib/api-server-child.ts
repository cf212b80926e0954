// The test API server in a process of its own, for the latency benches: in the bench's
// own process its work (the leader's status writes, each fanned out to the watches)
// held back the bench's client, and a sample counted that wait as portico's.
// Driven over IPC by bench/lib/out-of-process.ts.
import { FakeKubeApiServer } from '../../test/support/kube-apiserver/index.ts';
import { ingressesWithoutStatus } from './latency.ts';
type KubeObject = Record<string, unknown>;

type Message =
  | { id: number; op: 'apply'; objects: KubeObject[] }
  | { id: number; op: 'kubeconfig'; dir: string }
  | { id: number; op: 'ingressesWithoutStatus' }
  | { id: number; op: 'stop' };

const api = await FakeKubeApiServer.start({ token: 'bench' });

function answer(id: number, result: unknown): void {
  process.send!({ id, result });
}

process.on('message', (m: Message) => {
  switch (m.op) {
    case 'apply':
      for (const o of m.objects) api.apply(o as { kind?: string });
      answer(m.id, m.objects.length);
      return;
    case 'kubeconfig':
      answer(m.id, api.writeKubeconfig(m.dir));
      return;
    case 'ingressesWithoutStatus':
      answer(m.id, ingressesWithoutStatus(api));
      return;
    case 'stop':
      void api.stop().then(() => {
        answer(m.id, true);
        process.exit(0);
      });
  }
});
// The parent gone (killed, crashed): do not linger.
process.on('disconnect', () => process.exit(0));
process.send!({ ready: true });
