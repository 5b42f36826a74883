/**
 * The give-back owed by a wait that keeps one stored value for all its attempts (a waiter
 * registered in Redis: a fair-lock turn, a waiting writer, a waiter registered for a direct
 * grant). An attempt of it whose reply never came may have taken the lock under that value, so
 * the keys must be given back; but through GiveBacks (sent again on every reconnect and on a
 * timer) that give-back could reach Redis after a later attempt of the same wait took the lock
 * again under the same value, and delete the key of a lease the caller holds: in polling mode that
 * caller would go on trusting a lease whose lock another process can take. So the wait pays its
 * own debt, in order: before its next attempt goes out (and the attempt waits for Redis to
 * confirm it), or to GiveBacks once the wait ends without a lease, when nothing sends the value
 * again. test/integration/mutex-faults.test.ts has the restart that showed it.
 */
export class Owed {
  #send: (() => Promise<unknown>) | undefined;
  /** The give-back on its way, if any: a second settle waits for it instead of racing it. */
  #settling: Promise<void> | undefined;
  /** The wait ended (end()): where a debt owed from now on goes. */
  #ended: ((send: () => Promise<unknown>) => void) | undefined;

  /**
   * An attempt got no reply: `send` gives back what it may have taken (the same every time). One
   * still on its way when the wait ended (a timeout, an abort) fails after end(): its debt goes
   * where end() sent the rest, or the name stayed taken for the key's TTL (the simulation's seed
   * 553: a reader's attempt cut off by a dropped connection after its caller had timed out).
   */
  owe(send: () => Promise<unknown>): void {
    if (this.#ended !== undefined) this.#ended(send);
    else this.#send = send;
  }

  /**
   * A give-back is owed or on its way: a grant published for the value now may be undone by it
   * (it deletes the key the grant set), so the grant is left to the next attempt to find.
   */
  get unsettled(): boolean {
    return this.#send !== undefined || this.#settling !== undefined;
  }

  /**
   * Before the next attempt (or at once, in the background): gives back, and resolves only once
   * Redis confirmed every give-back owed; rejects (the attempt fails, to be retried) otherwise.
   */
  async settle(): Promise<void> {
    for (;;) {
      if (this.#settling !== undefined) {
        await this.#settling;
        continue;
      }
      const send = this.#send;
      if (send === undefined) return;
      this.#settling = send()
        .then(() => {
          if (this.#send === send) this.#send = undefined;
        })
        .finally(() => {
          this.#settling = undefined;
        });
    }
  }

  /**
   * The wait ended: what is still owed, and what an attempt still on its way comes to owe, goes
   * to `giveBack` (to be sent until confirmed; dropped by a wait that holds the lease under it).
   */
  end(giveBack: (send: () => Promise<unknown>) => void): void {
    this.#ended = giveBack;
    const send = this.#send;
    this.#send = undefined;
    if (send !== undefined) giveBack(send);
  }
}
