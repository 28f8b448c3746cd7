// What a plain `spark verify` can say of the snapshot a copy was made from without reading its
// rows: whether each source file is still the file the manifest recorded (size, mtime, inode,
// ctime and header CRC-32: the identity an interrupted pack's journal keys on, pack-io.ts). A
// file rewritten in place with its size and mtime restored (`rsync -t --inplace`) moves its
// ctime, so a copy made before is no longer vouched for. Checked where the recorded snapshot
// path exists; on a node without it the report says the identity was not checked. With
// `--source --full` every row is compared instead, which proves more.
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SparkError } from '../errors/errors.js';
import type { RecordedSourceFile } from '../engram/manifest-fields.js';
import { identifySources, recordedChange } from './pack-io.js';
import type { VerifyReport, VerifyRequest } from './verify-report.js';

export async function checkSourceIdentity(
  report: VerifyReport,
  recorded: { snapshot: string; files: RecordedSourceFile[] } | undefined,
  req: Pick<VerifyRequest, 'source' | 'rows'>,
): Promise<void> {
  if (!recorded || recorded.files.length === 0 || (req.source && req.rows === 'full')) return;
  const snapshot = recorded.snapshot;
  if (
    !(await stat(snapshot).then(
      (st) => st.isDirectory(),
      () => false,
    ))
  ) {
    // Another node, an unmounted NAS: nothing can be said of the source here.
    report.sourceIdentity = { snapshot, status: 'not found' };
    report.checked.push(`source identity not checked: ${snapshot} is not a directory here`);
    return;
  }
  const changes: string[] = [];
  let unreadable = false;
  for (const f of recorded.files) {
    let why: string;
    try {
      const [now] = await identifySources([{ name: f.name, file: join(snapshot, f.name) }]);
      why = recordedChange(f, now);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        why = 'it is gone from the snapshot';
      } else if (err instanceof SparkError && (err.code === 'E_SOURCE_CHANGED' || err.code === 'E_SNAPSHOT')) {
        why = err.message;
      } else {
        unreadable = true;
        continue;
      }
    }
    if (why !== '') changes.push(`${f.name}: ${why}`);
  }
  if (changes.length > 0) {
    report.sourceIdentity = { snapshot, status: 'changed' };
    const more = changes.length > 1 ? ` (and ${changes.length - 1} more changed files)` : '';
    report.problems.push(
      `the snapshot ${snapshot} changed since this copy was made (${changes[0]})${more}: the copy may hold old rows; ` +
        're-pack with spark pack --force, or, if the bytes are the same (a restored or moved snapshot), compare every row with spark verify --source SNAPSHOT --full',
    );
  } else {
    report.sourceIdentity = { snapshot, status: unreadable ? 'unreadable' : 'unchanged' };
  }
  report.checked.push(
    unreadable
      ? `source identity: some files of ${snapshot} could not be read`
      : 'the source files are the ones packed (size, mtime, inode, ctime, header CRC-32)',
  );
}
