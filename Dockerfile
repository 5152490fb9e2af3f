# ci-runner in a container: `docker run IMAGE run-once …` (one job, its result as the exit code) or
# `docker run IMAGE run` (the daemon over a mounted config.toml). See docs/install.md, "As a container".
#
# Works with the classic builder and with BuildKit: no RUN --mount, no COPY --chmod, no heredocs.
ARG NODE_IMAGE=node:20-bookworm-slim

# Every dependency, dev ones included, from the lockfile alone: this layer is reused until
# package.json or package-lock.json change. No package here has an install script.
FROM ${NODE_IMAGE} AS deps
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund --loglevel=warn

# Compile src/ to dist/ (TypeScript is a dev dependency).
FROM deps AS build
COPY tsconfig.json tsconfig.build.json tsconfig.ui.json ./
COPY scripts/build-dist.mjs ./scripts/
COPY src ./src
RUN npm run -s build && chmod 755 dist/cli/main.js

# Production dependencies only, pruned offline from the full tree: depends on the lockfile, not on src/.
# Type declarations and source maps are never read at run time: @kubernetes/client-node alone ships
# ~35 MB of them, and @types packages as dependencies.
FROM deps AS prod-deps
RUN npm prune --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=warn \
 && rm -rf node_modules/@types \
 && find node_modules -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -delete \
 && find node_modules -mindepth 1 -maxdepth 1 -type d -empty -delete

FROM ${NODE_IMAGE}
# git fetches job sources, bash runs job scripts, ca-certificates lets git trust HTTPS coordinators.
# tini is PID 1: it reaps the orphans a job's shell leaves behind (node does not reap what it did not
# start) and passes docker stop's SIGTERM on to the runner, which drains as on a host.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git bash ca-certificates tini \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*

# The runner's own user; pass --build-arg RUNNER_UID=… to match the owner of bind-mounted dirs.
ARG RUNNER_UID=1001
RUN groupadd --gid "${RUNNER_UID}" ci-runner \
 && useradd --uid "${RUNNER_UID}" --gid ci-runner --create-home --home-dir /home/ci-runner --shell /bin/bash ci-runner \
 && mkdir -p /builds /cache /etc/ci-runner \
 && chown ci-runner:ci-runner /builds /cache /etc/ci-runner

WORKDIR /opt/ci-runner
COPY package.json config.example.toml ./
COPY examples ./examples
COPY --from=prod-deps /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
RUN ln -s /opt/ci-runner/dist/cli/main.js /usr/local/bin/ci-runner

ENV NODE_ENV=production \
    CONFIG_FILE=/etc/ci-runner/config.toml
# From /, run-once's default builds and cache dirs (relative `builds` and `cache`, as are config.toml's
# defaults) are exactly the two volumes.
WORKDIR /
VOLUME ["/builds", "/cache"]
USER ci-runner
ENTRYPOINT ["/usr/bin/tini", "--", "ci-runner"]
CMD ["--help"]
