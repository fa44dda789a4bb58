# trellis serve in a container: a static binary on distroless.
#
# The binary is built first, on the host, offline from the module cache
# (modernc.org/sqlite is pure Go, so CGO is not needed):
#
#   CGO_ENABLED=0 GOFLAGS=-mod=readonly GOPROXY=off \
#     go build -trimpath -ldflags "-s -w" -o dist/trellis ./cmd/trellis
#   mkdir -p dist/data          # becomes /data, owned by the image's user
#   docker build -t trellis .
#   docker run --rm -v trellis-data:/data trellis keys create --tenant acme --database /data/trellis.db
#   docker run -p 2024:2024 -v trellis-data:/data trellis
#
# serve listens on all interfaces inside the container, which publishing a
# port needs, so it refuses to start until an API key exists (the first
# command prints one) unless given --insecure-no-auth (behind a proxy that
# authenticates).
# The image holds nothing else: no shell, no package manager. Data lives in
# /data (the embedded SQLite file) unless --database names PostgreSQL.
FROM gcr.io/distroless/static-debian12:nonroot
COPY dist/trellis /trellis
# A named volume mounted at /data starts as this directory: owned by the
# nonroot user the server runs as, so it can write its database.
COPY --chown=65532:65532 dist/data /data
WORKDIR /data
EXPOSE 2024
ENTRYPOINT ["/trellis"]
CMD ["serve", "--addr", "0.0.0.0:2024", "--database", "/data/trellis.db"]
