import BLE

/// The topics one gateway publishes and listens on, under a prefix shared by a fleet (default `swift-ble`).
///
/// | Topic | Retained | What |
/// |---|---|---|
/// | `PREFIX/ID/status` | yes | `online` while connected; `offline` as the Will and on a clean shutdown |
/// | `PREFIX/ID/devices/ADDRESS` | no | one JSON record per device and change (``DeviceRecord``) |
/// | `PREFIX/ID/rssi/DEVICE` | no | this gateway's smoothed view of a device (``PresenceView``) |
/// | `PREFIX/presence/DEVICE` | yes | the gateway that hears a device best (``PresenceDecision``) |
/// | `PREFIX/ID/command` | — | JSON requests (``GatewayRequest``) |
/// | `PREFIX/ID/response/REQUEST-ID` | no | their answers (``GatewayResponse``) |
/// | `PREFIX/ID/notifications/ADDRESS/UUID` | no | values of subscribed characteristics |
/// | `PREFIX/ID/stats` | yes | counters: readings published, messages dropped while the broker was away |
///
/// `DEVICE` and `ADDRESS` are the device's address as `AA:BB:CC:DD:EE:FF` (its identity address when a bond resolves
/// its resolvable private address).
public struct GatewayTopics: Sendable, Hashable {
    /// The prefix shared by the fleet.
    public var prefix: String
    /// This gateway's identifier.
    public var gatewayID: String

    /// Creates the topics of gateway `gatewayID` under `prefix`.
    public init(prefix: String = "swift-ble", gatewayID: String) {
        self.prefix = prefix
        self.gatewayID = gatewayID
    }

    /// `PREFIX/ID/status`.
    public var status: String { "\(prefix)/\(gatewayID)/status" }
    /// `PREFIX/ID/stats`.
    public var stats: String { "\(prefix)/\(gatewayID)/stats" }
    /// `PREFIX/ID/command`.
    public var command: String { "\(prefix)/\(gatewayID)/command" }
    /// `PREFIX/ID/devices/ADDRESS`.
    public func device(_ address: String) -> String { "\(prefix)/\(gatewayID)/devices/\(address)" }
    /// `PREFIX/ID/rssi/DEVICE`: this gateway's view of a device.
    public func view(_ device: String) -> String { "\(prefix)/\(gatewayID)/rssi/\(device)" }
    /// `PREFIX/presence/DEVICE`.
    public func presence(_ device: String) -> String { "\(prefix)/presence/\(device)" }
    /// `PREFIX/ID/response/REQUEST`.
    public func response(_ request: String) -> String { "\(prefix)/\(gatewayID)/response/\(request)" }
    /// `PREFIX/ID/notifications/ADDRESS/UUID`.
    public func notifications(_ address: String, _ uuid: BluetoothUUID) -> String {
        "\(prefix)/\(gatewayID)/notifications/\(address)/\(uuid)"
    }

    /// The filter of every gateway's views: `PREFIX/+/rssi/+` (for observers; a gateway subscribes to each other
    /// gateway's, ``views(of:)``, so that the broker does not send it its own).
    public var allViews: String { "\(prefix)/+/rssi/+" }
    /// The filter of one gateway's views: `PREFIX/GATEWAY/rssi/+`.
    public func views(of gateway: String) -> String { "\(prefix)/\(gateway)/rssi/+" }
    /// The filter of every gateway's status: `PREFIX/+/status`.
    public var allStatuses: String { "\(prefix)/+/status" }
    /// The filter of the presence decisions: `PREFIX/presence/+`.
    public var allPresence: String { "\(prefix)/presence/+" }

    /// What a topic under the prefix is, for the messages a gateway receives.
    public enum Parsed: Sendable, Hashable {
        /// `PREFIX/GATEWAY/rssi/DEVICE`.
        case view(gateway: String, device: String)
        /// `PREFIX/GATEWAY/status`.
        case status(gateway: String)
        /// `PREFIX/presence/DEVICE`.
        case presence(device: String)
        /// `PREFIX/ID/command` (this gateway's).
        case command
    }

    /// Parses a topic this gateway subscribes to; `nil` for any other.
    public func parse(_ topic: String) -> Parsed? {
        guard topic.hasPrefix(prefix + "/") else { return nil }
        let levels = topic.dropFirst(prefix.count + 1).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        switch levels.count {
        case 2 where levels[0] == "presence" && !levels[1].isEmpty: return .presence(device: levels[1])
        case 2 where levels[1] == "status" && !levels[0].isEmpty: return .status(gateway: levels[0])
        case 2 where levels[0] == gatewayID && levels[1] == "command": return .command
        case 3 where levels[1] == "rssi" && !levels[0].isEmpty && !levels[2].isEmpty: return .view(gateway: levels[0], device: levels[2])
        default: return nil
        }
    }
}
