# syntax=docker/dockerfile:1
# One image for the webhook (`serve`) and the node agent (`agent`, which also installs the CNI
# plugin built here onto the host). Base pinned by digest; bump tag and digest together:
#   docker buildx imagetools inspect node:26-bookworm-slim
ARG NODE_IMAGE=node:26-bookworm-slim@sha256:367679cf9792759492a486e4aa4b421764d71a9546a6dae8aab81a99eb797b3e

# Build: TypeScript bundled into dist/bundle (dependencies included: no node_modules ships), the
# static CNI plugin (cJSON from Debian's source package, libbpf
# linked in, the IPPROTO_SMC BPF program embedded) and the preload library.
FROM ${NODE_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential dpkg-dev ca-certificates \
      clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/bundle.mjs ./scripts/
COPY src ./src
RUN npx tsc -p tsconfig.build.json && node scripts/bundle.mjs
COPY native ./native
# cJSON's source goes under the stage's working directory, not /tmp: the image build's steps are
# also run as a script on a test machine (test/harness/dockerfile-steps.ts), which keeps them there.
RUN make -C native all CJSON_DIR="$PWD/cjson-src"

# The runtime's root, and nothing more: node and the libraries it links, chroot with its own (the
# agent runs the host's modprobe through it), the users, a /tmp. No shell, no npm, no package
# manager: the image is pulled onto every eRDMA node (#43).
FROM ${NODE_IMAGE} AS rootfs
WORKDIR /rootfs
RUN set -eu; \
    node=$(command -v node); chroot=$(command -v chroot); \
    mkdir -p usr/local/bin usr/sbin etc tmp app; chmod 1777 tmp; \
    cp "$node" usr/local/bin/node; cp "$chroot" usr/sbin/chroot; \
    for lib in $( (ldd "$node"; ldd "$chroot") | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u); do \
      cp --parents -L "$lib" .; \
    done; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > etc/passwd; \
    printf 'root:x:0:\nnonroot:x:65532:\n' > etc/group; \
    printf 'hosts: files dns\n' > etc/nsswitch.conf

# Runtime: no compiler, no dev dependencies, not root (the agent's DaemonSet sets uid 0 itself).
FROM scratch
COPY --from=rootfs /rootfs /
ENV PATH=/usr/local/bin:/usr/sbin:/usr/bin:/bin NODE_ENV=production
# `docker run IMAGE` works as it is: the development certificates go where the non-root user may
# write, and the webhook listens on the container's addresses (the manifests set both themselves).
ENV ERDMA_SMCR_HOST=0.0.0.0 ERDMA_SMCR_CERT_DIR=/tmp/webhook-certs
WORKDIR /app
COPY package.json ./
COPY bin ./bin
COPY proto ./proto
COPY docs/admission ./docs/admission
COPY --from=build /src/dist/bundle ./dist/bundle
COPY --from=build /src/native/build/erdma-smcr ./native/build/erdma-smcr
COPY --from=build /src/native/build/libsmc-preload.so ./native/build/libsmc-preload.so
USER 65532:65532
ENTRYPOINT ["node", "/app/bin/erdma-smcr.js"]
CMD ["serve"]
