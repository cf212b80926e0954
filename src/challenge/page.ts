// The page a browser without clearance gets on an under-attack route: small, no
// external resource, nothing cached. Its script finds a counter whose SHA-256 (with
// the signed nonce) starts with the asked number of zero bits, in Web Workers (one per
// core, up to 4), stores "<nonce>:<counter>" in a short-lived cookie and reloads the
// same URL (same method, path and query): the server then checks it and sets the
// clearance. The hashing is a small SHA-256 in JavaScript rather than crypto.subtle:
// browsers hide crypto.subtle on plain HTTP, and where it exists it was 2.6 times slower
// per hash here (a promise per 70-byte digest; bench/challenge-hash-rate.ts).

/** The cookie the page stores its solution in. */
export const SOLUTION_COOKIE = 'portico_challenge';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// Runs in a Web Worker: {nonce, bits, start, step} in, {counter, hashes} out when found.
export const CHALLENGE_WORKER_SOURCE = String.raw`
var K=[0x428a2f98,0x71374491,0xb5c0fbcf,0xe9b5dba5,0x3956c25b,0x59f111f1,0x923f82a4,0xab1c5ed5,0xd807aa98,0x12835b01,0x243185be,0x550c7dc3,0x72be5d74,0x80deb1fe,0x9bdc06a7,0xc19bf174,0xe49b69c1,0xefbe4786,0x0fc19dc6,0x240ca1cc,0x2de92c6f,0x4a7484aa,0x5cb0a9dc,0x76f988da,0x983e5152,0xa831c66d,0xb00327c8,0xbf597fc7,0xc6e00bf3,0xd5a79147,0x06ca6351,0x14292967,0x27b70a85,0x2e1b2138,0x4d2c6dfc,0x53380d13,0x650a7354,0x766a0abb,0x81c2c92e,0x92722c85,0xa2bfe8a1,0xa81a664b,0xc24b8b70,0xc76c51a3,0xd192e819,0xd6990624,0xf40e3585,0x106aa070,0x19a4c116,0x1e376c08,0x2748774c,0x34b0bcb5,0x391c0cb3,0x4ed8aa4a,0x5b9cca4f,0x682e6ff3,0x748f82ee,0x78a5636f,0x84c87814,0x8cc70208,0x90befffa,0xa4506ceb,0xbef9a3f7,0xc67178f2];
var W=new Int32Array(64);
function sha256(s){var n=s.length,l=((n+9+63)>>6)<<4,m=new Int32Array(l),i;
for(i=0;i<n;i++)m[i>>2]|=s.charCodeAt(i)<<(24-(i&3)*8);m[n>>2]|=0x80<<(24-(n&3)*8);m[l-1]=n*8;
var h0=0x6a09e667,h1=0xbb67ae85,h2=0x3c6ef372,h3=0xa54ff53a,h4=0x510e527f,h5=0x9b05688c,h6=0x1f83d9ab,h7=0x5be0cd19;
for(var o=0;o<l;o+=16){var a=h0,b=h1,c=h2,d=h3,e=h4,f=h5,g=h6,h=h7,t,u,j;
for(j=0;j<64;j++){if(j<16)W[j]=m[o+j];else{t=W[j-15];u=W[j-2];W[j]=(((t>>>7)|(t<<25))^((t>>>18)|(t<<14))^(t>>>3))+W[j-7]+(((u>>>17)|(u<<15))^((u>>>19)|(u<<13))^(u>>>10))+W[j-16]|0;}
t=h+(((e>>>6)|(e<<26))^((e>>>11)|(e<<21))^((e>>>25)|(e<<7)))+((e&f)^(~e&g))+K[j]+W[j]|0;
u=(((a>>>2)|(a<<30))^((a>>>13)|(a<<19))^((a>>>22)|(a<<10)))+((a&b)^(a&c)^(b&c))|0;h=g;g=f;f=e;e=d+t|0;d=c;c=b;b=a;a=t+u|0;}
h0=h0+a|0;h1=h1+b|0;h2=h2+c|0;h3=h3+d|0;h4=h4+e|0;h5=h5+f|0;h6=h6+g|0;h7=h7+h|0;}
return [h0,h1];}
function zeros(x,y,bits){if(bits<=32)return bits===0||(x>>>(32-bits))===0;return x===0&&(bits===64?y===0:(y>>>(64-bits))===0);}
onmessage=function(ev){var p=ev.data,prefix=p.nonce+':',i=p.start,step=p.step,bits=p.bits,n=0;
for(;;){var r=sha256(prefix+i);n++;if(zeros(r[0],r[1],bits)){postMessage({counter:i,hashes:n});return;}i+=step;}};
`;

const STYLE = 'body{font:16px/1.5 system-ui,sans-serif;margin:0;display:flex;min-height:100vh;align-items:center;justify-content:center;background:#f6f7f9;color:#1d2330}main{max-width:32em;padding:2em}h1{font-size:1.4em;margin:0 0 .5em}';

/**
 * The challenge page for `host`. `nonce` and `bits` go into the script as JSON; the
 * host into the text, escaped. The page is the same for every path of the host.
 */
export function challengePage(host: string, nonce: string, bits: number, secure: boolean): string {
  const shown = escapeHtml(host === '' ? 'this site' : host);
  const params = JSON.stringify({ nonce, bits, cookie: SOLUTION_COOKIE, secure }).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">
<title>Checking your browser</title><style>${STYLE}</style></head>
<body><main><h1>Checking your browser</h1>
<p id="status">${shown} is protecting itself from automated traffic. Your browser is doing a short check (about a second); the page then opens by itself.</p>
<noscript><p><strong>This check needs JavaScript.</strong> Turn JavaScript on for ${shown} and reload this page, or use a browser that runs it. Cookies must be allowed too: the check leaves one that lets you in for a while.</p></noscript>
<script id="portico-challenge" type="application/json">${params}</script>
<script>
(function () {
  var p = JSON.parse(document.getElementById('portico-challenge').textContent);
  var status = document.getElementById('status');
  if (!window.Worker || !navigator.cookieEnabled) {
    status.textContent = 'This check needs Web Workers and cookies, which this browser does not allow here. Allow cookies for this site (or use another browser) and reload.';
    return;
  }
  // Solved, yet challenged again and again within a minute: the cookie does not come back.
  try {
    var seen = JSON.parse(sessionStorage.getItem('portico-challenge') || '{"n":0,"t":0}');
    if (Date.now() - seen.t > 60000) seen = { n: 0, t: Date.now() };
    seen.n++;
    sessionStorage.setItem('portico-challenge', JSON.stringify(seen));
    if (seen.n > 3) {
      sessionStorage.removeItem('portico-challenge');
      status.textContent = 'The check was solved, but this browser did not send its cookie back. Allow cookies for this site, then reload the page.';
      return;
    }
  } catch (e) { /* no sessionStorage here: no loop guard */ }
  var source = URL.createObjectURL(new Blob([${JSON.stringify(CHALLENGE_WORKER_SOURCE)}], { type: 'text/javascript' }));
  var count = Math.max(1, Math.min(4, navigator.hardwareConcurrency || 1));
  var workers = [], done = false, started = performance.now();
  for (var w = 0; w < count; w++) {
    var worker = new Worker(source);
    worker.onmessage = function (ev) {
      if (done) return;
      done = true;
      workers.forEach(function (x) { x.terminate(); });
      window.porticoChallenge = { ms: performance.now() - started, workers: count };
      document.cookie = p.cookie + '=' + p.nonce + ':' + ev.data.counter + '; path=/; max-age=300; samesite=lax' + (p.secure ? '; secure' : '');
      location.replace(location.href);
    };
    worker.postMessage({ nonce: p.nonce, bits: p.bits, start: w, step: count });
    workers.push(worker);
  }
})();
</script></main></body></html>
`;
}
