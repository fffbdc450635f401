import type { Bike, BikeFields } from '../../../src/bikes/bike';
import { newBike } from '../../support/bikes';

export interface CreateLoad {
  /** Bikes the service acknowledged with 200, as it acknowledged them. */
  acknowledged: Bike[];
  /** Bodies sent whose request never got an answer (in flight when the service died). */
  unanswered: BikeFields[];
  /** Resolves once every worker has stopped (after the service died, or stop() was called). */
  finished: Promise<void>;
  stop(): void;
}

/**
 * A steady load of creates: `workers` clients, each sending POST /bikes/ back to back until the
 * service stops answering or stop() is called.
 */
export function createLoad(baseUrl: string, token: string, workers = 8): CreateLoad {
  const acknowledged: Bike[] = [];
  const unanswered: BikeFields[] = [];
  let stopped = false;
  const worker = async () => {
    while (!stopped) {
      const fields = newBike({ title: `Crash Test Bike ${Math.random().toString(36).slice(2, 10)}` });
      let res: Response;
      try {
        res = await fetch(`${baseUrl}/bikes/`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(fields),
        });
      } catch {
        unanswered.push(fields);
        return;
      }
      let body: unknown;
      try {
        body = await res.json();
      } catch {
        // The status line came but the body did not: not an acknowledgement.
        unanswered.push(fields);
        return;
      }
      if (res.status !== 200) throw new Error(`a create under load answered ${res.status}`);
      acknowledged.push(body as Bike);
    }
  };
  const finished = Promise.all(Array.from({ length: workers }, worker)).then(() => undefined);
  return { acknowledged, unanswered, finished, stop: () => void (stopped = true) };
}
