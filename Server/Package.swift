// swift-tools-version: 6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

// The server's package: the gateway, the command line, their tests, the
// benchmarks' programs and the fuzz targets. The repository's root
// Package.swift is CanopyKit's alone, so that an app adding the repository
// by URL gets the Swift client and its dependencies, nothing of the
// server's (DECISIONS 127). Its folders are beside this manifest, in
// Server/ (Sources/, Tests/, Benchmarks/, Examples/, Fuzz/, Plugins/,
// Tools/, schema/); the SQL it runs (migrations/, sql/) and the web
// console (web/) stay at the repository's root, where `canopy serve` and
// the Dockerfile find them. Build it from the repository with `make build`,
// or:
//
//     swift build --package-path Server --scratch-path .build
//
// `make fuzz` (docs/FUZZING.md) builds with CANOPY_FUZZ=1 (into .build too):
// the modules that parse outside input get libFuzzer's coverage
// instrumentation, and the `canopy-fuzz` target exists. Ordinary builds see
// neither. (Per target, not -Xswiftc: that would also link libFuzzer into
// the EmbedText build tool.)
let fuzzing = Context.environment["CANOPY_FUZZ"] == "1"
let parserSettings = swiftSettings + (fuzzing ? [.unsafeFlags(["-sanitize=fuzzer"])] : [])

// CanopyKit comes from the repository's root package, by path (..). A
// path dependency is named by its folder's name, lowercased (SwiftPM's
// package identity): the repository's folder, whatever the clone is called.
let canopyKitPackage = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "canopy").lowercased()

// What the gateway's tests link, in every tier that runs the gateway (and
// CanopyGatewayTestSupport, which they share).
let gatewayTestDependencies: [Target.Dependency] = [
    "CanopyAdmin",
    "CanopyAssets",
    "CanopyEncoding",
    "CanopyGateway",
    "CanopyIdentity",
    "CanopyOutbound",
    "CanopyPlanner",
    "CanopyPush",
    "CanopyRequestStore",
    "CanopyTestSupport",
    "CanopyWAL",
    "CanopyWebServices",
    .product(name: "AsyncHTTPClient", package: "async-http-client"),
    .product(name: "Crypto", package: "swift-crypto"),
    .product(name: "GraphQL", package: "GraphQL"),
    .product(name: "HTTPTypes", package: "swift-http-types"),
    .product(name: "Hummingbird", package: "hummingbird"),
    .product(name: "HummingbirdHTTP2", package: "hummingbird"),
    .product(name: "HummingbirdTesting", package: "hummingbird"),
    .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
    .product(name: "HummingbirdWSTesting", package: "hummingbird-websocket"),
    .product(name: "JWTKit", package: "jwt-kit"),
    .product(name: "Logging", package: "swift-log"),
    .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "NIOSSL", package: "swift-nio-ssl"),
    .product(name: "PostgresNIO", package: "postgres-nio"),
    .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
]

let package = Package(
    name: "canopy",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "canopy", targets: ["canopy"]),
        .executable(name: "canopy-floor", targets: ["canopy-floor"]),
        .executable(name: "canopykit-sync", targets: ["canopykit-sync"]),
        .library(name: "CanopyGateway", targets: ["CanopyGateway"]),
        .library(name: "CanopyRequestStore", targets: ["CanopyRequestStore"]),
        .library(name: "CanopyAdmin", targets: ["CanopyAdmin"]),
        .library(name: "CanopyPlanner", targets: ["CanopyPlanner"]),
        .library(name: "CanopyIdentity", targets: ["CanopyIdentity"]),
        .library(name: "CanopyAssets", targets: ["CanopyAssets"]),
        .library(name: "CanopyPush", targets: ["CanopyPush"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/GraphQLSwift/GraphQL", from: "4.3.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // Traces (issue 53, docs/TRACING.md): the API every module writes
        // spans with, and swift-otel's OTLP/HTTP exporter, which only
        // `canopy serve` links. Its gRPC exporter is left out (a trait), so
        // grpc-swift is not built.
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
        // The Swift client (issue 21): the repository's root package
        // (../Package.swift), for its tests, the example and the benchmark.
        .package(path: ".."),
    ],
    targets: [
        // Hex and base64url, written once for every module.
        .target(
            name: "CanopyEncoding",
            swiftSettings: parserSettings
        ),
        // Positions in PostgreSQL's write-ahead log, which change tokens,
        // replicas and the Canopy-Position header compare.
        .target(
            name: "CanopyWAL",
            swiftSettings: parserSettings
        ),
        // The compiler from a request to SQL: the GraphQL reader, the
        // predicate and schema languages, one plan per root field, the SQL
        // builder and the JSON values. Pure: no I/O.
        .target(
            name: "CanopyPlanner",
            dependencies: [
                "CanopyEncoding",
                "CanopyWAL",
                .product(name: "GraphQL", package: "GraphQL"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ],
            swiftSettings: parserSettings,
            plugins: ["EmbedSDL"]
        ),
        // CloudKit Web Services' protocol (issue 49): its paths, its request
        // shapes read into the planner's typed inputs (a query's filters as
        // a predicate tree, typed field values), its error table. The HTTP
        // door (credentials, routes) is CanopyGateway's WebServices/.
        .target(
            name: "CanopyWebServices",
            dependencies: ["CanopyPlanner"],
            swiftSettings: parserSettings
        ),
        // schema/canopy.graphql, compiled into CanopyPlanner at build time.
        .executableTarget(
            name: "EmbedText",
            path: "Tools/EmbedText",
            swiftSettings: swiftSettings
        ),
        .plugin(
            name: "EmbedSDL",
            capability: .buildTool(),
            dependencies: ["EmbedText"]
        ),
        // PostgreSQL while serving requests: the pool, replicas, LISTEN,
        // prepared shapes, the caller's identity set inside each statement,
        // uploads and bearer tokens. The gateway and the push deliverer use
        // this and nothing of CanopyAdmin (ArchitectureTests keeps it so).
        .target(
            name: "CanopyRequestStore",
            dependencies: [
                "CanopyEncoding",
                "CanopyWAL",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // What an operator runs: the embedded cluster, migrations, backup
        // and restore, users and tokens, record-type schemas, the asset
        // collector's references. Used by the CLI and the tests.
        .target(
            name: "CanopyAdmin",
            dependencies: [
                "CanopyEncoding",
                "CanopyRequestStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // Sign-in with OpenID Connect providers: JWT verification (jwt-kit)
        // against key sets fetched over HTTP (async-http-client).
        .target(
            name: "CanopyIdentity",
            dependencies: [
                "CanopyEncoding",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: parserSettings
        ),
        // Assets' bytes (docs/API.md §11): content-addressed stores behind one
        // protocol, streamed and hashed (swift-crypto) through NIO's file system.
        .target(
            name: "CanopyAssets",
            dependencies: [
                "CanopyEncoding",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
            ],
            swiftSettings: parserSettings
        ),
        // Push (issue 23, docs/PUSH.md): the deliverer from the outbox to
        // User-supplied URLs (webhooks, Web Push endpoints) checked and
        // pinned so they cannot be aimed into the operator's network.
        .target(
            name: "CanopyOutbound",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: parserSettings
        ),
        // APNs (HTTP/2, ES256 tokens), Web Push (RFC 8291/8292) and webhooks.
        .target(
            name: "CanopyPush",
            dependencies: [
                "CanopyEncoding",
                "CanopyOutbound",
                "CanopyPlanner",
                "CanopyRequestStore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CanopyGateway",
            dependencies: [
                "CanopyAssets",
                "CanopyOutbound",
                "CanopyPush",
                "CanopyEncoding",
                "CanopyIdentity",
                "CanopyPlanner",
                "CanopyRequestStore",
                "CanopyWAL",
                "CanopyWebServices",
                .product(name: "GraphQL", package: "GraphQL"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "canopy",
            dependencies: [
                "CanopyAssets",
                "CanopyGateway",
                "CanopyIdentity",
                "CanopyOutbound",
                "CanopyPush",
                "CanopyPlanner",
                "CanopyAdmin",
                "CanopyRequestStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // The stack's floor for `make bench` (issue 18): Hummingbird and
        // PostgresNIO running one captured statement, nothing else.
        .executableTarget(
            name: "canopy-floor",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Benchmarks/Floor",
            swiftSettings: swiftSettings
        ),
        // `make bench`'s CanopyKit first sync (issue 51): a zone synced
        // through CanopyKit's SyncEngine, in ranges or one chain.
        .executableTarget(
            name: "canopykit-sync",
            dependencies: [
                .product(name: "CanopyKit", package: canopyKitPackage),
            ],
            path: "Benchmarks/KitSync",
            swiftSettings: swiftSettings
        ),
        // The example app of docs/CANOPYKIT.md: the fasting log, on CanopyKit alone.
        .executableTarget(
            name: "fasting",
            dependencies: [
                .product(name: "CanopyKit", package: canopyKitPackage),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/Fasting",
            swiftSettings: swiftSettings
        ),
        // One CanopyKit device of the randomized fault run: the Swift
        // twin of clients/js/test/fault/device.js (docs/SYNC_FAULTS.md).
        .executableTarget(
            name: "canopykit-fault-device",
            dependencies: [
                .product(name: "CanopyKit", package: canopyKitPackage),
            ],
            path: "Tests/CanopyKitFaultDevice",
            swiftSettings: swiftSettings
        ),
        // Tests come in tiers by what a test needs (docs/TESTING.md); a
        // test's tier is the target it lives in, and make test runs the
        // tiers one after another, each on a fresh PostgreSQL cluster
        // (scripts/test-tier.sh). Two support libraries serve them all.
        //
        // Real PostgreSQL for tests (a tier's own cluster), the built
        // `canopy` as a process, the repository's folders, waiting with a
        // deadline.
        .target(
            name: "CanopyTestSupport",
            dependencies: [
                "CanopyAdmin",
                "CanopyRequestStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/CanopyTestSupport",
            swiftSettings: swiftSettings
        ),
        // The in-process gateway harness and the helpers the gateway's tests
        // share across tiers (GraphQL calls, sockets, replicas, receivers,
        // the identity provider and network lab processes the stories start).
        .target(
            name: "CanopyGatewayTestSupport",
            dependencies: gatewayTestDependencies,
            path: "Tests/CanopyGatewayTestSupport",
            swiftSettings: swiftSettings
        ),
        // Pure: no PostgreSQL, no other process (the planner, predicates,
        // encodings, identity configuration, asset URLs, the Web Services
        // readers, the architecture test). Parallel.
        .testTarget(
            name: "PureTests",
            dependencies: [
                "CanopyAdmin",
                "CanopyAssets",
                "CanopyEncoding",
                "CanopyGateway",
                "CanopyGatewayTestSupport",
                "CanopyIdentity",
                "CanopyPlanner",
                "CanopyRequestStore",
                "CanopyTestSupport",
                "CanopyWAL",
                "CanopyWebServices",
                .product(name: "CanopyKit", package: canopyKitPackage),
                .product(name: "GraphQL", package: "GraphQL"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Database: PostgreSQL and the in-process gateway, no other program.
        // Parallel, each suite on a database of its own.
        .testTarget(
            name: "DatabaseTests",
            dependencies: [
                "CanopyGatewayTestSupport",
            ] + gatewayTestDependencies,
            swiftSettings: swiftSettings
        ),
        // Stories: everything that starts a process (canopy serve, Chromium,
        // Node, Python clients, pg_auto_failover, network namespaces, the
        // randomized fault run, the generated-request property). Serial.
        .testTarget(
            name: "StoryTests",
            dependencies: [
                "CanopyGatewayTestSupport",
                .product(name: "CanopyKit", package: canopyKitPackage),
            ] + gatewayTestDependencies,
            swiftSettings: swiftSettings
        ),
        // Citus: a coordinator and two workers (issue 67, docs/CITUS.md),
        // started by scripts/test-tier.sh citus. Serial.
        .testTarget(
            name: "CitusTests",
            dependencies: [
                "CanopyGatewayTestSupport",
            ] + gatewayTestDependencies,
            swiftSettings: swiftSettings
        ),
        // Latency: every test that asserts how fast something happens, run
        // alone in a step of its own. Serial.
        .testTarget(
            name: "LatencyTests",
            dependencies: [
                "CanopyGatewayTestSupport",
            ] + gatewayTestDependencies,
            swiftSettings: swiftSettings
        ),
    ]
)
if fuzzing {
    package.products.append(.executable(name: "canopy-fuzz", targets: ["canopy-fuzz"]))
    package.targets.append(.executableTarget(
        name: "canopy-fuzz",
        dependencies: [
            "CanopyAssets", "CanopyEncoding", "CanopyIdentity", "CanopyOutbound", "CanopyPlanner", "CanopyWebServices",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "JWTKit", package: "jwt-kit"),
        ],
        path: "Fuzz/Sources",
        swiftSettings: parserSettings,
        linkerSettings: [.unsafeFlags(["-sanitize=fuzzer", "-use-ld=lld"])]
    ))
}
