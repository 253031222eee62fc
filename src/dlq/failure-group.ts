/** Moved to src/contract/failure-group.ts (pure: the store computes group ids with it, and the API's selection names them). */
export * from '../contract/failure-group';
