import { notesKey, readNotes } from '../base/grant-note-format.ts';
import type { Driver } from '../driver/types.ts';
import { RedisCommandError } from '../errors.ts';
import type { Inspection } from '../primitives/inspection.ts';
import { REGISTRY } from '../primitives/registry.ts';
import { scripts } from '../scripts/index.ts';
import { inspectionKeys, type Primitive } from './key-names.ts';

/** One node's view of one primitive of one name; undefined when none of its keys exist. */
export async function readOne(
  driver: Driver,
  prefix: string,
  name: string,
  primitive: Primitive,
  max: number,
): Promise<Inspection | undefined> {
  const { inspection, layout } = REGISTRY[primitive];
  const reply = await driver.eval({
    script: inspection.script,
    keys: inspectionKeys(prefix, name, primitive),
    args: [String(max)],
  });
  if (!Array.isArray(reply)) throw new RedisCommandError(`unexpected reply from the inspect script`);
  const found = inspection.parse(name, reply);
  if (found === undefined || found.holders.length === 0) return found;
  // When the holders that waited got their leases: a second read, of their tokens' notes only.
  const keys = layout.keys(prefix, name);
  const noted = readNotes(
    await driver.eval({
      script: scripts.inspectGranted,
      keys: inspection.held.map((role) => notesKey(keys[role]!)),
      args: found.holders.map((h) => h.token),
    }),
  );
  if (noted.size === 0) return found;
  const holders = found.holders.map((h) => {
    const at = noted.get(h.token);
    return at === undefined ? h : { ...h, grantedAt: at };
  });
  return { ...found, holders };
}
