import BLEProtocols
import BLEWire

/// A server-side event, attributed to the link (central) that caused it.
public struct GATTServerEvent: Sendable, Hashable {
    /// The client's link.
    public var connection: HostConnection
    /// What happened.
    public var event: ATTServerEvent
}
