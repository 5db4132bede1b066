import BLE
import BLEErrors
import BLEFiles

/// A request to a gateway's GATT client, received as JSON on `PREFIX/ID/command`:
///
/// ```json
/// {"id": "r1", "op": "read", "device": "SwiftBLELab", "characteristic": "2A29"}
/// {"id": "r2", "op": "write", "device": "00:5B:00:00:00:02", "characteristic": "FF06", "value": "0a00", "withResponse": true}
/// ```
///
/// `op` is one of ``Operation``; `device` an address (`AA:BB:CC:DD:EE:FF`) or an advertised name; `characteristic`
/// (read, write, subscribe, unsubscribe) a UUID, optionally with `service`; `value` (write) hex; `withResponse`
/// (write) defaults to true; `timeout` in seconds (default 10) bounds finding and connecting. The answer goes to
/// `PREFIX/ID/response/ID` (``GatewayResponse``).
public struct GatewayRequest: Sendable, Hashable {
    /// What to do.
    public enum Operation: String, Sendable, Hashable, CaseIterable {
        /// Connect (find the device by address or name first).
        case connect
        /// Discover services, characteristics and descriptors (connecting if needed).
        case discover
        /// Read a characteristic.
        case read
        /// Write a characteristic.
        case write
        /// Turn on notifications or indications; values go to `PREFIX/ID/notifications/ADDRESS/UUID`.
        case subscribe
        /// Turn them off.
        case unsubscribe
        /// Pair (and bond) with the device.
        case pair
        /// Disconnect.
        case disconnect
    }

    /// The request's identifier, which names its response topic: 1 to 128 characters, no `/`, `+` or `#`.
    public var id: String
    /// What to do.
    public var operation: Operation
    /// The device's address or advertised name.
    public var device: String
    /// The service the characteristic is in (`nil`: the first that has it).
    public var service: BluetoothUUID?
    /// The characteristic.
    public var characteristic: BluetoothUUID?
    /// The value to write.
    public var value: [UInt8]?
    /// Whether a write waits for the device's acknowledgement (Write Request) or not (Write Command).
    public var withResponse: Bool
    /// How long to look for the device and to connect.
    public var timeout: Duration

    /// Creates a request.
    public init(id: String, operation: Operation, device: String, service: BluetoothUUID? = nil, characteristic: BluetoothUUID? = nil,
                value: [UInt8]? = nil, withResponse: Bool = true, timeout: Duration = .seconds(10)) {
        self.id = id
        self.operation = operation
        self.device = device
        self.service = service
        self.characteristic = characteristic
        self.value = value
        self.withResponse = withResponse
        self.timeout = timeout
    }

    /// Whether `id` can name a response topic level.
    public static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 128 && !id.contains { $0 == "/" || $0 == "+" || $0 == "#" || $0 == "\u{0}" }
    }

    /// The `id` of a request, when that much of it can be read: where the answer to a malformed one goes.
    public static func requestID(of payload: [UInt8]) -> String? {
        guard let object = GatewayJSON.object(payload), case .some(.string(let id)) = object["id"], isValidID(id) else { return nil }
        return id
    }

    /// Parses a request. A malformed one gives a ``GatewayError``; ``requestID(of:)`` reads its `id` when that much
    /// can be read, so that the error is answered on its response topic.
    public static func parse(_ payload: [UInt8]) -> Result<GatewayRequest, GatewayError> {
        guard let object = GatewayJSON.object(payload) else {
            return .failure(GatewayError(.malformedRequest, "the request is not a JSON object"))
        }
        guard case .some(.string(let id)) = object["id"], isValidID(id) else {
            return .failure(GatewayError(.malformedRequest, "\"id\" must be a string of 1 to 128 characters without '/', '+' or '#'"))
        }
        func fail(_ code: GatewayErrorCode, _ reason: String) -> Result<GatewayRequest, GatewayError> {
            .failure(GatewayError(code, reason))
        }
        guard case .some(.string(let opText)) = object["op"] else { return fail(.malformedRequest, "\"op\" is missing") }
        guard let operation = Operation(rawValue: opText) else {
            return fail(.unknownOperation, "unknown op '\(opText)' (one of \(Operation.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        guard case .some(.string(let device)) = object["device"], !device.isEmpty else {
            return fail(.malformedRequest, "\"device\" (an address or advertised name) is missing")
        }
        var request = GatewayRequest(id: id, operation: operation, device: device)
        func uuid(_ key: String) -> Result<BluetoothUUID?, GatewayError> {
            switch object[key] {
            case nil, .some(.null): return .success(nil)
            case .some(.string(let text)):
                guard let uuid = BluetoothUUID(text) else { return .failure(GatewayError(.malformedRequest, "\"\(key)\": '\(text)' is not a UUID")) }
                return .success(uuid)
            default: return .failure(GatewayError(.malformedRequest, "\"\(key)\" must be a UUID string"))
            }
        }
        switch uuid("service") {
        case .success(let s): request.service = s
        case .failure(let e): return .failure(e)
        }
        switch uuid("characteristic") {
        case .success(let c): request.characteristic = c
        case .failure(let e): return .failure(e)
        }
        switch operation {
        case .read, .write, .subscribe, .unsubscribe:
            if request.characteristic == nil { return fail(.malformedRequest, "\"\(opText)\" needs \"characteristic\"") }
        default: break
        }
        switch object["value"] {
        case nil, .some(.null): break
        case .some(.string(let hex)):
            guard let bytes = [UInt8](hex: hex) else { return fail(.malformedRequest, "\"value\": '\(hex)' is not hex") }
            // Core 5.4, Vol 3, Part F, 3.2.9: an attribute value is at most 512 octets.
            guard bytes.count <= 512 else { return fail(.malformedRequest, "\"value\" is \(bytes.count) bytes; an attribute value is at most 512") }
            request.value = bytes
        default: return fail(.malformedRequest, "\"value\" must be a hex string")
        }
        if operation == .write && request.value == nil { return fail(.malformedRequest, "\"write\" needs \"value\" (hex)") }
        switch object["withResponse"] {
        case nil, .some(.null): break
        case .some(.bool(let b)): request.withResponse = b
        default: return fail(.malformedRequest, "\"withResponse\" must be true or false")
        }
        switch object["timeout"] {
        case nil, .some(.null): break
        case let value:
            guard let seconds = GatewayJSON.double(value), seconds > 0, seconds <= 300 else {
                return fail(.malformedRequest, "\"timeout\" must be a number of seconds in (0, 300]")
            }
            request.timeout = .milliseconds(Int((seconds * 1000).rounded()))
        }
        return .success(request)
    }
}

/// Why a request failed: a stable code for programs (its raw value is the response's `"code"`) and a reason for
/// people. When the device answered with an ATT error, that error is the underlying one (``BLEFailure/attError``).
public typealias GatewayError = BLEFailure<GatewayErrorCode>

extension BLEFailure where Code == GatewayErrorCode {
    /// The device answered with the ATT error `attCode`: code ``GatewayErrorCode/attError``, the ATT error underlying.
    public static func attError(_ attCode: UInt8, _ reason: String, file: String = #fileID, line: Int = #line) -> GatewayError {
        GatewayError(.attError, reason, underlying: ATTErrorCode(rawValue: attCode), file: file, line: line)
    }

    /// The ATT error code, when the device answered with one.
    public var attError: UInt8? { (underlying as? ATTErrorCode)?.rawValue }
}

/// The kind of a ``GatewayError``: an open struct whose raw value is the response's `"code"`.
public struct GatewayErrorCode: RawRepresentable, BLEErrorCode {
    /// The response's `"code"`: `not_found`, `att_error`...
    public var rawValue: String
    /// The kind called `rawValue` in responses.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Not JSON, or a member missing or of the wrong type. ``BLEErrorCategory/invalidInput``.
    public static let malformedRequest = GatewayErrorCode(rawValue: "malformed_request")
    /// An `op` the gateway does not know. ``BLEErrorCategory/invalidInput``.
    public static let unknownOperation = GatewayErrorCode(rawValue: "unknown_op")
    /// No such device (within the timeout), service or characteristic. ``BLEErrorCategory/notFound``.
    public static let notFound = GatewayErrorCode(rawValue: "not_found")
    /// Something did not answer in time. ``BLEErrorCategory/timedOut``.
    public static let timeout = GatewayErrorCode(rawValue: "timeout")
    /// The device answered with an ATT error (``BLEFailure/attError`` has its code). ``BLEErrorCategory/protocolError``.
    public static let attError = GatewayErrorCode(rawValue: "att_error")
    /// The request needs a connection the gateway does not have (or lost). ``BLEErrorCategory/disconnected``.
    public static let notConnected = GatewayErrorCode(rawValue: "not_connected")
    /// A protocol failure (HCI status, malformed response, pairing failed). ``BLEErrorCategory/protocolError``.
    public static let protocolError = GatewayErrorCode(rawValue: "protocol_error")
    /// Anything else. ``BLEErrorCategory/failure``.
    public static let failed = GatewayErrorCode(rawValue: "failed")
    /// The broker refused the gateway's connection for good (bad user name or password, not authorized): what
    /// ``Gateway/run()`` throws. ``BLEErrorCategory/protocolError``.
    public static let brokerRefused = GatewayErrorCode(rawValue: "broker_refused")

    public var category: BLEErrorCategory {
        switch self {
        case .malformedRequest, .unknownOperation: .invalidInput
        case .notFound: .notFound
        case .timeout: .timedOut
        case .attError, .protocolError, .brokerRefused: .protocolError
        case .notConnected: .disconnected
        default: .failure
        }
    }

    /// The raw value.
    public var description: String { rawValue }
}

/// The answer to a ``GatewayRequest`` on `PREFIX/ID/response/ID`: `{"id":"r1","ok":true,...}` with what the
/// operation gives (`value` in hex and `decoded` for a read, `services` for a discovery...), or
/// `{"id":"r1","ok":false,"error":{"code":"not_found","reason":"..."}}`. A request whose `id` cannot be read is
/// answered on `PREFIX/ID/response/_` with `"id":null`.
public enum GatewayResponse {
    /// The topic level the response of `requestID` goes to.
    public static func topicLevel(_ requestID: String?) -> String { requestID ?? "_" }

    /// A success with `fields` after `id` and `ok`.
    public static func success(id: String, _ fields: [(key: String, value: JSONValue)]) -> JSONValue {
        .object([("id", .string(id)), ("ok", .bool(true))] + fields)
    }

    /// The failure of the request `id` (`nil`: a request whose `id` could not be read).
    public static func failure(_ error: GatewayError, id: String?) -> JSONValue {
        var details: [(key: String, value: JSONValue)] = [("code", .string(error.code.rawValue)), ("reason", .string(error.reason))]
        if let att = error.attError { details.append(("att_error", .int(Int(att)))) }
        return .object([("id", id.map(JSONValue.string) ?? .null), ("ok", .bool(false)), ("error", .object(details))])
    }
}
