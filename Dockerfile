# The service image: worker + API (tsx runs the TypeScript sources directly).
FROM node:24-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY proto ./proto
ENV NODE_ENV=production
EXPOSE 8080
CMD ["node", "--import", "tsx", "src/main.ts"]
