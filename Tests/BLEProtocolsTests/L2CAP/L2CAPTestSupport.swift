import BLEProtocols
import BLEWire
import Testing

typealias Action = L2CAPChannelManager.Action

/// Two managers on one simulated link, a central and a peripheral: every frame one sends is fed to the other, in
/// order, until nothing is left in flight. Everything else the managers emit is recorded per side.
struct L2CAPLinkPair {
    enum Side { case central, peripheral }

    var central: L2CAPChannelManager
    var peripheral: L2CAPChannelManager
    /// Non-send actions, in order.
    var centralEvents: [Action] = []
    var peripheralEvents: [Action] = []
    /// Frames each side sent.
    var centralFrames: [L2CAPBasicFrame] = []
    var peripheralFrames: [L2CAPBasicFrame] = []

    init(configuration: L2CAPChannelManager.Configuration = .init()) {
        central = L2CAPChannelManager(role: .central, configuration: configuration)
        peripheral = L2CAPChannelManager(role: .peripheral, configuration: configuration)
    }

    /// Performs `actions` emitted by `side`, delivering frames to the other side until the link is quiet.
    mutating func run(_ actions: [Action], from side: Side) {
        var inFlight = FIFO<(Side, L2CAPBasicFrame)>()
        record(actions, from: side, into: &inFlight)
        while let (from, frame) = inFlight.popFirst() {
            let to: Side = from == .central ? .peripheral : .central
            let result = to == .central ? central.receive(frame) : peripheral.receive(frame)
            record(result, from: to, into: &inFlight)
        }
    }

    private mutating func record(_ actions: [Action], from side: Side, into inFlight: inout FIFO<(Side, L2CAPBasicFrame)>) {
        for action in actions {
            if case .send(let frame) = action {
                inFlight.append((side, frame))
                if side == .central { centralFrames.append(frame) } else { peripheralFrames.append(frame) }
            } else if side == .central {
                centralEvents.append(action)
            } else {
                peripheralEvents.append(action)
            }
        }
    }

    /// The SDUs delivered to `side` on `cid`, concatenated.
    func delivered(to side: Side, on cid: L2CAPChannelID) -> [[UInt8]] {
        (side == .central ? centralEvents : peripheralEvents).compactMap {
            if case .deliverSDU(cid, let sdu) = $0 { sdu } else { nil }
        }
    }

    /// The channels `side` saw open.
    func opened(_ side: Side) -> [L2CAPChannelInfo] {
        (side == .central ? centralEvents : peripheralEvents).compactMap {
            if case .channelOpened(let info) = $0 { info } else { nil }
        }
    }

    mutating func clearEvents() {
        centralEvents = []
        peripheralEvents = []
        centralFrames = []
        peripheralFrames = []
    }
}

/// A signaling C-frame from hex.
func signaling(_ hex: String) -> L2CAPBasicFrame {
    L2CAPBasicFrame(channelID: .leSignaling, payload: [UInt8](hex: hex) ?? [])
}

/// The frames in `actions`, as "cid: hex" strings (signaling frames are easiest to compare that way).
func sentFrames(_ actions: [Action]) -> [String] {
    actions.compactMap {
        if case .send(let frame) = $0 { String(frame.channelID.rawValue, radix: 16) + ": " + frame.payload.hexString(separator: " ") } else { nil }
    }
}

/// The actions that are not frames.
func events(_ actions: [Action]) -> [Action] {
    actions.filter { if case .send = $0 { false } else { true } }
}

/// The timers started in `actions`.
func startedTimers(_ actions: [Action]) -> [L2CAPTimerID] {
    actions.compactMap { if case .startTimer(let id, _) = $0 { id } else { nil } }
}

/// Bytes 0, 1, 2, ... of the given length.
func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &+ $0 >> 8) }
}
