import BLEProtocols
import BLEWire

/// A server-side event, attributed to the link (central) that caused it.
public struct GATTServerEvent: Sendable, Hashable {
    /// The connection handle of the client.
    public var connection: UInt16
    /// The client's link.
    public var link: LinkID
    /// What happened.
    public var event: ATTServerEvent
}
