// swift-tools-version: 6.0
import PackageDescription

// CanopyKit, the Swift client (issue 21), is a package of its own so that an
// app's minimum platforms are its own: the server's packages (Hummingbird,
// PostgresNIO) need macOS 14 and more, and SwiftPM checks every library of a
// package against its dependencies' platforms. The server's package depends
// on this one by path, for its tests and the example app; docs/CANOPYKIT.md.
let package = Package(
    name: "CanopyKit",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "CanopyKit", targets: ["CanopyKit"]),
    ],
    dependencies: [
        // WebSockets on Linux: Foundation's URLSessionWebSocketTask needs a
        // libcurl built with WebSocket support, which Debian's is not.
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
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
    ]
)
