import BLEHost
import BLEProtocols
import BLEWire

/// A read or write of a characteristic (or descriptor) the application answers, from one central: the peripheral
/// side of CoreBluetooth's `CBATTRequest`. Characteristics published with `source: .application` reach the
/// application this way, as ``PeripheralRequest/Kind/application(_:)`` in ``PeripheralManager/requests()``; answer
/// each request once, now or later (within the central's 30-second transaction timeout), with a value, an acceptance
/// or an ATT error — application errors 0x80–0x9F included.
///
/// ```swift
/// for await request in await manager.requests() {
///     guard case .application(let asked) = request.kind else { continue }
///     switch asked.kind {
///     case .read: await asked.respond(with: counter.next())
///     case .write(let value, _) where value.isEmpty: await asked.refuse(ATTErrorCode(rawValue: 0x80))
///     case .write, .preparedWrites: await asked.accept()
///     }
/// }
/// ```
///
/// Two values are equal when they are the same request of the same central.
public struct AttributeRequest: Sendable, Identifiable, Hashable {
    /// What the central asks.
    public enum Kind: Sendable, Hashable {
        /// Read the value from `offset` on (a long read asks for the rest from where it got to).
        case read(offset: Int)
        /// Write `value`; without response, the answer is not sent (a refusal only drops the write).
        case write(value: [UInt8], withResponse: Bool)
        /// A reliable (prepared) write set at its execution: each part's attribute, offset and bytes, in order. Accept
        /// or refuse the set as a whole; the central's parts for stored values are written only on acceptance.
        case preparedWrites([ATTPrepareWriteRequest])
    }

    let engine: GATTEngine
    let underlying: GATTServerRequest

    /// Identifies the request.
    public var id: UInt64 { underlying.id }
    /// The central that sent it.
    public var central: HostConnection { underlying.connection }
    /// The attribute's handle (of the first part, for a prepared-write set).
    public let handle: AttributeHandle
    /// The attribute's type: the characteristic (or descriptor) UUID.
    public let characteristic: BluetoothUUID?
    /// What is asked.
    public let kind: Kind

    init(engine: GATTEngine, request: GATTServerRequest, database: GATTDatabase) {
        self.engine = engine
        underlying = request
        switch request.request {
        case .read(let handle, let offset):
            self.handle = handle
            kind = .read(offset: offset)
        case .write(let handle, let value, let withResponse):
            self.handle = handle
            kind = .write(value: value, withResponse: withResponse)
        case .preparedWrites(let parts):
            handle = parts.first?.handle ?? 0
            kind = .preparedWrites(parts)
        }
        characteristic = database.attribute(handle)?.type
    }

    /// Answers a read with the value from the request's offset on (longer than what fits, it is cut as ATT does).
    public func respond(with value: [UInt8]) async { await engine.respond(to: underlying, with: .value(value)) }

    /// Accepts a write (or a prepared-write set).
    public func accept() async { await engine.respond(to: underlying, with: .accepted) }

    /// Refuses the request with an ATT error (for example ``ATTErrorCode/valueNotAllowed`` or an application error
    /// `ATTErrorCode(rawValue: 0x80)`).
    public func refuse(_ error: ATTErrorCode) async { await engine.respond(to: underlying, with: .error(error)) }

    /// Whether two values are the same request of the same central.
    public static func == (lhs: AttributeRequest, rhs: AttributeRequest) -> Bool { lhs.underlying == rhs.underlying }

    /// Hashes the request's identity (its number and its central's link).
    public func hash(into hasher: inout Hasher) { hasher.combine(underlying) }
}
