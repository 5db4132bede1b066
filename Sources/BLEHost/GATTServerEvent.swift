import BLEProtocols
import BLEWire

/// A server-side event, attributed to the link (central) that caused it.
public struct GATTServerEvent: Sendable, Hashable {
    /// The client's link.
    public var connection: HostConnection
    /// What happened.
    public var event: ATTServerEvent
}

/// A read or write of an attribute the application answers (``GATTValueSource/application``), attributed to the
/// central that sent it. Answer it with ``GATTEngine/respond(to:with:)``, now or later: the ATT response goes out
/// then. A peer waits at most its transaction timeout (30 s) before it gives up on the link.
public struct GATTServerRequest: Sendable, Hashable, Identifiable {
    /// Identifies the request within its engine.
    public let id: UInt64
    /// The central's link.
    public let connection: HostConnection
    /// What is asked.
    public let request: ATTApplicationRequest
    /// Whether the central waits for the answer (false for a write without response: the answer is not sent).
    public let needsResponse: Bool
}
