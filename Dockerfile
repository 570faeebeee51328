# syntax=docker/dockerfile:1
# The agent-controller image: TypeScript compiled to dist/ in a build stage; the final stage
# holds only production dependencies and the compiled output, and runs as uid 1000.
#
# NODE_VERSION is pinned to the Node release the test suite runs on (package.json engines).
ARG NODE_VERSION=20.20.2

# --- build: dev dependencies + tsc -------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY generated ./generated
COPY src ./src
RUN npm run build

# --- prod-deps: runtime dependencies only -------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# --- runtime ------------------------------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
# package.json carries "type": "module", which the compiled ESM output needs.
COPY package.json ./
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Numeric, so the kubelet can verify runAsNonRoot; matches the Deployment's runAsUser 1000.
USER 1000:1000
# 8081: /healthz, /readyz, /metrics (HEALTH_PORT). 8082: prompt API (components/realtime).
EXPOSE 8081 8082
# For plain `docker run`; in Kubernetes the Deployment's liveness/readiness probes are used.
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.HEALTH_PORT||'8081')+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "--enable-source-maps", "dist/src/controller/main.js"]
