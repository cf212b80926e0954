// The probe of the change-latency benches: asks until `attempt` says the change is served.
//
// One attempt after another, with a 1 ms timer between them, left a gap after each
// failed attempt: the new route could go live just after an attempt was sent, and the
// next one started only once that one's 404 came back (a new connection, a request and
// its answer, 1-3 ms on this machine) and the timer fired. That gap was the bench's, not
// portico's. Here a new attempt starts every `everyMs` while fewer than `inFlight` are
// out, so one starts within about a millisecond of any moment; it resolves when the
// first attempt that succeeds comes back.
export function untilServed(attempt: () => Promise<boolean>, everyMs = 1, inFlight = 2): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = 0;
    let done = false;
    const timer = setInterval(launch, everyMs);
    function finish(err?: unknown): void {
      if (done) return;
      done = true;
      clearInterval(timer);
      if (err === undefined) resolve();
      else reject(err);
    }
    function launch(): void {
      if (done || out >= inFlight) return;
      out++;
      attempt().then(
        (served) => {
          out--;
          if (served) finish();
        },
        (err: unknown) => {
          out--;
          finish(err);
        },
      );
    }
    launch();
  });
}
