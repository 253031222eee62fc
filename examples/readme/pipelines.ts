// pipelines.ts
import { localStep, pipeline } from 'pipeline-orchestrator';

export const greetings = pipeline('greetings', { version: 1 })
  .step(localStep('greet', (visitor: { name: string }) => ({ greeting: `hello ${visitor.name}` })))
  .step(localStep('shout', (greeted: { greeting: string }) => ({ greeting: greeted.greeting.toUpperCase() })));

export default [greetings];
