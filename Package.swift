// swift-tools-version: 6.0
import PackageDescription

// CanopyKit, the Swift client (issue 21): this repository's root package,
// and all of it, so that an app adding the repository by URL
// (`.package(url: …)` in SwiftPM or Xcode) gets the client with its own
// platforms (iOS 16, macOS 13) and dependencies (NIO on Linux, for
// WebSockets) and nothing of the server's: SwiftPM checks a package's
// every library against its dependencies' platforms, and the server's
// (Hummingbird, PostgresNIO) need macOS 14 and more. The server is the
// package in Server/ (its manifest says how to build it; `make build`),
// which depends on this one by path (DECISIONS 127, docs/CANOPYKIT.md).
let package = Package(
    name: "CanopyKit",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "CanopyKit", targets: ["CanopyKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.29.0"),
    ],
    targets: [
        .target(
            name: "CanopyKit",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio", condition: .when(platforms: [.linux])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(platforms: [.linux])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(platforms: [.linux])),
                .product(name: "NIOWebSocket", package: "swift-nio", condition: .when(platforms: [.linux])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(platforms: [.linux])),
            ],
            path: "CanopyKit/Sources/CanopyKit",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
    ]
)
