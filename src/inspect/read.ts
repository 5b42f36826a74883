import type { Driver } from '../driver/types.ts';
import { RedisCommandError } from '../errors.ts';
import type { Inspection } from '../primitives/inspection.ts';
import { REGISTRY } from '../primitives/registry.ts';
import { inspectionKeys, type Primitive } from './key-names.ts';

/** One node's view of one primitive of one name; undefined when none of its keys exist. */
export async function readOne(
  driver: Driver,
  prefix: string,
  name: string,
  primitive: Primitive,
  max: number,
): Promise<Inspection | undefined> {
  const { inspection } = REGISTRY[primitive];
  const reply = await driver.eval({
    script: inspection.script,
    keys: inspectionKeys(prefix, name, primitive),
    args: [String(max)],
  });
  if (!Array.isArray(reply)) throw new RedisCommandError(`unexpected reply from the inspect script`);
  return inspection.parse(name, reply);
}
