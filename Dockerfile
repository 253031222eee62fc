# The service image: worker + API, compiled JavaScript on plain Node (no TypeScript loader).
# Stage 1 builds with the dev tools; stage 2 holds the production dependencies and the build.
FROM node:24-bookworm-slim AS build
WORKDIR /app
# The worker kit is a workspace package (packages/worker-kit): npm ci needs its package.json.
COPY package.json package-lock.json ./
COPY packages/worker-kit/package.json ./packages/worker-kit/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY packages/worker-kit ./packages/worker-kit
COPY scripts ./scripts
# dist/main.js (the service) and dist/cli.js (pipeline-admin), the kit's packages/worker-kit/dist
# (dist/main.js imports it as a package), then the workflows bundled once:
# a worker starts without bundling them.
RUN npm run build && node --import tsx scripts/bundle-workflows.ts dist/workflows.js

FROM node:24-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/worker-kit/package.json ./packages/worker-kit/
RUN npm ci --omit=dev --no-audit --no-fund
COPY --from=build /app/dist ./dist
# The kit as a worker team installs it: its compiled code and the proto (the wire protocol's one home,
# which the service's gRPC transport loads too).
COPY --from=build /app/packages/worker-kit/dist ./packages/worker-kit/dist
COPY packages/worker-kit/proto ./packages/worker-kit/proto
COPY bin ./bin
# Read at run time from the package root (src/paths.ts): the migrations run at start-up.
COPY src/store/migrations ./src/store/migrations
# A team's image adds its compiled pipelines module under /app (examples/team-project/Dockerfile):
# its `import ... from 'pipeline-orchestrator'` resolves here, to this very code (one copy of each class).
RUN ln -s .. node_modules/pipeline-orchestrator
ENV PIPELINE_ORCHESTRATOR_WORKER_WORKFLOW_BUNDLE=/app/dist/workflows.js
ENV NODE_ENV=production
# inside a container the API must listen on every interface (the default is 127.0.0.1)
ENV PIPELINE_SERVER_HOST=0.0.0.0
EXPOSE 8080
# The package's command (bin/pipeline-orchestrator.mjs start): compiled code on plain Node.
CMD ["node", "bin/pipeline-orchestrator.mjs", "start"]
