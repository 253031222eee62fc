/**
 * The pipelines module the service registers (`pipeline.pipelines-module`, compiled to
 * dist/pipelines.js by `npm run build`). The pricing worker's URL comes from the environment.
 */
import { greetings } from './greetings.js';
import { createQuotesPipeline } from './quotes.js';

export default [greetings, createQuotesPipeline(process.env.PRICING_URL ?? 'http://127.0.0.1:8091/transition')];
