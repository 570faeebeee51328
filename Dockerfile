# syntax=docker/dockerfile:1
# Two images from one file:
#   default (last stage, `runtime`): the agent-controller. TypeScript compiled to dist/ in a build
#     stage; the final stage holds only production dependencies and the compiled output, and runs
#     as uid 1000.
#   `docker build --target agent`: AGENT_IMAGE, the run pod's init, supervisor and courier as one
#     self-contained executable (npm run build:agent, docs/run-pod.md) on a glibc base without Node.
#
# NODE_VERSION is pinned to the Node release the test suite runs on (package.json engines).
ARG NODE_VERSION=20.20.2
# The agent image's base: glibc + libstdc++ (all the executable links) and the init's tools.
ARG DEBIAN_VERSION=12.12-slim

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

# --- agent-build: the run-pod executable, a Node single executable application -------------
FROM node:${NODE_VERSION}-bookworm-slim AS agent-build
# binutils' strip: the build drops Node's symbol table and debug info (a smaller executable).
RUN apt-get update \
  && apt-get install -y --no-install-recommends binutils \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY generated ./generated
COPY src ./src
COPY scripts/build-agent.ts ./scripts/build-agent.ts
# The executable and its hard links alone in a directory of their own (without the bundle beside them).
RUN npm run build:agent && mkdir /app/agent-bin && mv dist/agent/ai-agent dist/agent/ai-agent-* /app/agent-bin/

# --- agent: AGENT_IMAGE (docker build --target agent) --------------------------------------
FROM debian:${DEBIAN_VERSION} AS agent
# What the init runs (docs/run-pod.md#the-init): git for clones, the only executable its plan can
# need (src/run-pod/init/plan.ts requiredExecutables), with the CA bundle for https remotes. The
# CLI is installed by the supervisor with the Station image's npm, not here (docs/agent-clis.md).
# tini's static build is the agent container's reaper (src/run-pod/witness/reaper.ts): the init
# copies it beside the supervisor, whatever libc the Station image has.
RUN apt-get update \
  && apt-get install -y --no-install-recommends ca-certificates git tini \
  && cp /usr/bin/tini-static /usr/local/bin/ai-agent-reaper \
  && rm -rf /var/lib/apt/lists/*
# The executable and its three hard links (build:agent makes them) in one COPY of their directory,
# which keeps them linked: the image holds the executable once. (A `RUN --mount=…,from=agent-build`
# copy was keyed on its text alone by buildah's layer cache, so a rebuild kept a stale executable.)
COPY --from=agent-build /app/agent-bin/ /usr/local/bin/
# No USER: the init container runs as root (docs/run-pod.md#the-init); the pod spec sets every container's user.
ENTRYPOINT ["/usr/local/bin/ai-agent-init"]

# --- runtime (the default target: the controller) ------------------------------------------
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
