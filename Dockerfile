# trellis serve in a container: a static binary on distroless.
#
# The binary is built first, on the host, offline from the module cache
# (modernc.org/sqlite is pure Go, so CGO is not needed):
#
#   CGO_ENABLED=0 GOFLAGS=-mod=readonly GOPROXY=off \
#     go build -trimpath -ldflags "-s -w" -o dist/trellis ./cmd/trellis
#   docker build -t trellis .
#   docker run -p 2024:2024 -v trellis-data:/data trellis
#
# The image holds nothing else: no shell, no package manager. Data lives in
# /data (the embedded SQLite file) unless --database names PostgreSQL.
FROM gcr.io/distroless/static-debian12:nonroot
COPY dist/trellis /trellis
WORKDIR /data
EXPOSE 2024
# Listening on all interfaces inside the container is what publishing a
# port needs; put the service behind API keys (docs/serve.md, Security)
# before publishing it beyond the host.
ENTRYPOINT ["/trellis", "serve", "--addr", "0.0.0.0:2024", "--database", "/data/trellis.db"]
