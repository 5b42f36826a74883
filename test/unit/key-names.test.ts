import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseKey } from '../../src/inspect/key-names.ts';

test('parseKey: a grant note belongs to its primitive, so top and the dashboard read the name again when one lands', () => {
  const cases: [string, string][] = [
    ['p:{a}:granted', 'mutex'],
    ['p:{a}:sem:granted', 'semaphore'],
    ['p:{a}:rw:writer:granted', 'rwlock'],
    ['p:{a}:rw:readers:granted', 'rwlock'],
    ['p:{a}:fair:granted', 'fair'],
    ['p:{a}:election:granted', 'election'],
  ];
  for (const [key, primitive] of cases) assert.deepEqual(parseKey('p', key), { name: 'a', primitive }, key);
  assert.equal(parseKey('p', 'p:{a}:sem:released:granted'), undefined, 'only the keys holders hold');
});
