# The bike catalog service. Built and run by docker-compose.yml next to a PostgreSQL container.

FROM node:20-bookworm-slim AS build
WORKDIR /app
# Dependencies first, so source edits do not re-run npm ci. npm ci's postinstall runs
# `prisma generate`, which needs the schema and prisma.config.ts.
COPY package.json package-lock.json prisma.config.ts ./
COPY prisma ./prisma
RUN npm ci
COPY tsconfig.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The migrations are applied from here at start-up.
COPY --from=build /app/prisma ./prisma
USER node
EXPOSE 3000
# node itself, not npm, is PID 1's child here: SIGTERM from `docker compose stop` reaches the
# service, which finishes requests in flight and exits 0.
CMD ["node", "dist/server.js"]
