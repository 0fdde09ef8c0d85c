# syntax=docker/dockerfile:1
# A small non-root image of the static kneewatch binary, for people with Docker:
#   docker build --build-arg VERSION=$(cat VERSION) --build-arg REVISION=$(git rev-parse HEAD) \
#     -t ghcr.io/kneewatch/kneewatch:$(cat VERSION) .
# Releases do not use it: `make image` builds the same image (user,
# entrypoint, command, port, labels; a test in internal/release checks) for
# linux/amd64 and linux/arm64 without a Docker engine.
# The chart runs it as UID 65532 with a read-only root filesystem and no
# capabilities; the binary needs nothing but its config and the network.

FROM golang:1.26.8-bookworm AS build
WORKDIR /src
# Dependencies first, so a source change reuses the module download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
# CGO off: a fully static binary that runs on a distroless base without libc.
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w \
        -X github.com/prometheus/common/version.Version=${VERSION} \
        -X github.com/prometheus/common/version.Revision=${REVISION}" \
      -o /out/kneewatch ./cmd/kneewatch \
 && /out/kneewatch version
# The license files of every module the binary links, as `make image` ships them.
RUN go run ./cmd/kneewatch-release licenses --binary linux/amd64=/out/kneewatch --out /out/third_party

# distroless/static: CA certificates, tzdata and /etc/passwd with the
# "nonroot" user (65532); no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.source="https://github.com/kneewatch/kneewatch" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.title="kneewatch"
COPY --from=build /out/kneewatch /usr/local/bin/kneewatch
COPY LICENSE NOTICE /usr/share/doc/kneewatch/
COPY --from=build /out/third_party /usr/share/doc/kneewatch/third_party/
USER 65532:65532
EXPOSE 9847
ENTRYPOINT ["/usr/local/bin/kneewatch"]
CMD ["serve", "--config.file=/etc/kneewatch/kneewatch.yml"]
