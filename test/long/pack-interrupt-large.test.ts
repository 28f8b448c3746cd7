// Ctrl-C during a `spark pack` of 1.2 GB: said, ended by SIGINT, and resumed by the same command
// (the small copy of it is test/pack/pack-interrupt.test.ts).
import { test } from 'node:test';
import { interruptAndResume } from '../helpers/pack-interrupt.js';

test(
  'Ctrl-C during a pack says it can be resumed, ends by SIGINT, and the re-run resumes',
  { timeout: 120_000 },
  async () => {
    // ~1.2 GB to copy for rank 0 of 2, held to 300 MB/s so the copy is still running at the
    // second progress line however fast the disk is (direct I/O copies it in about a second).
    await interruptAndResume({ vocab: 200_000, rateMBs: 300, atLine: 2 });
  },
);
