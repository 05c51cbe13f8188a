# Canopy on the official Swift image; docker-compose.yml runs it next to postgres:15.
FROM swift:6.1-bookworm AS build
WORKDIR /src
# The server's package is Server/ (its folders and its pinned
# Package.resolved); it depends on CanopyKit, the root package.
COPY Package.swift ./
COPY CanopyKit ./CanopyKit
COPY Server ./Server
RUN swift build --package-path Server --scratch-path .build -c release --product canopy --static-swift-stdlib

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends postgresql-client ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/.build/release/canopy /usr/local/bin/canopy
COPY migrations /app/migrations
COPY sql /app/sql
COPY web /app/web
COPY clients/js /app/clients/js
WORKDIR /app
ENV CANOPY_MIGRATIONS_DIR=/app/migrations CANOPY_SQL_DIR=/app/sql CANOPY_WEB_DIR=/app/web CANOPY_HOST=0.0.0.0 CANOPY_PORT=8080
EXPOSE 8080
USER nobody
CMD ["canopy", "serve"]
