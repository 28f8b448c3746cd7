// Ctrl-C during `spark pack`: one line saying the work is kept and how to resume, the process
// ends by SIGINT (status 130 in a shell), and the same command then resumes. A small copy here;
// a 1.2 GB one in test/long/pack-interrupt-large.test.ts.
import { test } from 'node:test';
import { interruptAndResume } from '../helpers/pack-interrupt.js';

test(
  'Ctrl-C during a pack says it can be resumed, ends by SIGINT, and the re-run resumes',
  { timeout: 120_000 },
  async () => {
    // ~120 MB to copy for rank 0 of 2, held to 60 MB/s: about two seconds, still running at the
    // second progress line.
    await interruptAndResume({ vocab: 20_000, rateMBs: 60, atLine: 2 });
  },
);
