/** `greetings`: two local steps, a name checked then greeted. */
import { localStep, NonRetryableError, pipeline } from 'pipeline-orchestrator';

export interface Person {
  name: string;
}

export const greetings = pipeline('greetings', { version: 1 })
  .step(
    localStep('normalize', (person: Person) => {
      const name = person.name?.trim();
      if (!name) throw new NonRetryableError('a name is required', 'NAME_MISSING');
      return { name };
    }),
  )
  .step(localStep('greet', ({ name }) => ({ greeting: `Hello, ${name}!` })));
