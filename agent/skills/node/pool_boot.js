// The warm pool's bootstrap for node (docs/architecture.md, "The warm pool"), loaded by
// `node --require /workspace/.sandcell/pool_boot.js /workspace/main.js` in a prepared sandbox
// (the member puts this file there and removes it once the interpreter is ready): says "ready"
// with one NUL byte on stdout and waits for the go byte on stdin, a byte read from fd 0 (not yet
// a stream: the rest is the program's stdin). Node then loads /workspace/main.js as its main
// module exactly as `node /workspace/main.js` does: the same stack frames under an uncaught
// error, process.argv, require.main. What --require leaves behind is taken away: this module's
// cache entry and process.execArgv (which child_process.fork would pass on).
'use strict';
{
  const fs = require('fs');
  delete require.cache[__filename];
  process.execArgv.length = 0;
  fs.writeSync(1, '\0');
  const go = Buffer.alloc(1);
  let n = 0;
  for (;;) {
    try {
      n = fs.readSync(0, go, 0, 1, null);
      break;
    } catch (e) {
      if (e.code !== 'EINTR') throw e;  // a blocking pipe (the member's): no EAGAIN to spin on
    }
  }
  if (n !== 1 || go[0] !== 0) process.reallyExit(0);  // the member cancelled (EOF): nothing runs
}
