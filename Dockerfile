# One image for both paygate processes: the API (default command) and the Temporal worker.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY tsconfig.json worker.ts ./
COPY src ./src
COPY engine ./engine
COPY bin ./bin
# DATA_DIR (PGlite, a generated keyring, the sandbox secret) belongs to the service user alone
RUN mkdir -p /app/.data && chown node:node /app/.data && chmod 700 /app/.data
USER node
EXPOSE 8080
CMD ["npx", "tsx", "src/api/server.ts"]
