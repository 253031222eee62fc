# The service image: worker + API (tsx runs the TypeScript sources directly).
FROM node:24-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY bin ./bin
COPY proto ./proto
COPY scripts/bundle-workflows.ts ./scripts/
# The workflows bundled once at build time: a worker starts without bundling them.
RUN node --import tsx scripts/bundle-workflows.ts dist/workflows.js
ENV PIPELINE_ORCHESTRATOR_WORKER_WORKFLOW_BUNDLE=/app/dist/workflows.js
ENV NODE_ENV=production
# inside a container the API must listen on every interface (the default is 127.0.0.1)
ENV PIPELINE_SERVER_HOST=0.0.0.0
EXPOSE 8080
CMD ["node", "--import", "tsx", "src/main.ts"]
