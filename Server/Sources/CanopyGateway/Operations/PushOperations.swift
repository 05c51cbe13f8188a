import CanopyOutbound
import CanopyPlanner
import CanopyPush
import CanopyRequestStore
import Foundation

/// `saveSubscription`: a QUERY subscription's filter is checked against its
/// record type's schema, read (cached) first, as `records` does.
struct SaveSubscriptionOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        guard let recordType = try SaveSubscriptionPlan.queryRecordType(of: field, request: executor.request) else {
            return try await executor.run(try SaveSubscriptionPlan(field, request: executor.request, schema: nil))
        }
        let plan = try await executor.recordSchemas.planning(recordType, logger: executor.logger) { schema in
            try SaveSubscriptionPlan(field, request: executor.request, schema: schema)
        }
        return try await executor.run(plan)
    }
}

/// `registerDevice`: a webhook's signing secret comes from the system's
/// secure random source, and is answered once. A webhook or Web Push URL
/// passes the outbound check first (the deliverer checks it again before
/// every request).
struct RegisterDeviceOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        var generator = SystemRandomNumberGenerator()
        let secret = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        var vapidPublicKey: String?
        if try executor.request.arguments(of: field).string("kind") == "WEB_PUSH" {
            vapidPublicKey = try await VAPIDKey.load(from: executor.database.secrets, logger: executor.logger).publicKeyBase64URL
        }
        let plan = try RegisterDevicePlan(field, request: executor.request, webhookSecret: secret, vapidPublicKey: vapidPublicKey)
        if let destination = plan.destination {
            do {
                _ = try await executor.configuration.outbound.destination(for: destination)
            } catch {
                executor.logger.notice("device registration refused: its URL leads inside the operator's network", metadata: ["canopy.reason": "\(error.message)"])
                throw plan.refusedDestination(error.message)
            }
        }
        return try await executor.run(plan)
    }
}

/// `pushConfiguration`: the VAPID public key a web page subscribes with.
struct PushConfigurationOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let key = try await VAPIDKey.load(from: executor.database.secrets, logger: executor.logger)
        let members = try field.children.map { child -> String in
            let value: JSONValue = switch child.name {
            case "vapidPublicKey": .string(key.publicKeyBase64URL)
            case "__typename": .string("PushConfiguration")
            default: throw QueryError.noField(child, of: "PushConfiguration")
            }
            return JSONValue.string(child.responseKey).jsonText + ":" + value.jsonText
        }
        return "{" + members.joined(separator: ",") + "}"
    }
}
