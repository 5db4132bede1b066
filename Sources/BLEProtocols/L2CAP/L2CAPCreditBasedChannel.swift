import BLEWire

/// One credit based channel's data path: SDU segmentation into K-frames under the peer's credits, reassembly of the
/// peer's K-frames under ours, and credit bookkeeping both ways. Core 5.4, Vol 3, Part A, 3.4 and 10.1.
///
/// A K-frame's information payload is at most MPS octets; the first K-frame of an SDU starts with the 2-octet SDU
/// Length. Every K-frame costs the sender one credit.
struct L2CAPCreditBasedChannel: Sendable {
    enum State: Sendable {
        /// Our connection request is outstanding.
        case connecting
        /// Data flows.
        case open
        /// Our Disconnection Request is outstanding; the CID stays reserved until it is answered or times out.
        case disconnecting
    }

    /// What one received K-frame did.
    enum Receipt: Sendable {
        /// Part of an SDU; more K-frames follow.
        case partial
        /// The K-frame completed this SDU.
        case sdu([UInt8])
        /// The peer broke the rules; the channel must be disconnected.
        case violation(L2CAPChannelViolation)
    }

    var state: State
    let localCID: UInt16
    var remoteCID: UInt16 = 0
    let spsm: L2CAPSPSM
    let isEnhanced: Bool
    let initiatedLocally: Bool
    /// What we announced.
    var local: L2CAPChannelParameters
    var peerMTU: UInt16 = 0
    var peerMPS: UInt16 = 0
    /// K-frames we may still send.
    private(set) var sendCredits = 0
    /// K-frames the peer may still send.
    private(set) var receiveCredits = 0
    /// K-frame payloads waiting for credits.
    private var outgoing = FIFO<[UInt8]>()
    private var sdu: [UInt8] = []
    private var sduLength: Int?
    /// Whether the credits of a complete SDU's K-frames come back only once the consumer took the SDU.
    let returnsCreditsOnConsumption: Bool
    /// Credits the peer spent that may be returned now.
    private var returnable = 0
    /// Per delivered SDU not yet consumed, the credits its K-frames spent (consumption mode).
    private var held = FIFO<Int>()
    /// Credits spent on the SDU being reassembled and not yet released.
    private var currentSDUCredits = 0

    init(state: State, localCID: UInt16, spsm: L2CAPSPSM, isEnhanced: Bool, initiatedLocally: Bool,
         local: L2CAPChannelParameters, returnsCreditsOnConsumption: Bool = false) {
        self.returnsCreditsOnConsumption = returnsCreditsOnConsumption
        self.state = state
        self.localCID = localCID
        self.spsm = spsm
        self.isEnhanced = isEnhanced
        self.initiatedLocally = initiatedLocally
        self.local = local
    }

    /// Completes the channel with the peer's side of the connection exchange.
    mutating func open(remoteCID: UInt16, peerMTU: UInt16, peerMPS: UInt16, peerInitialCredits: UInt16) {
        state = .open
        self.remoteCID = remoteCID
        self.peerMTU = peerMTU
        self.peerMPS = peerMPS
        sendCredits = Int(peerInitialCredits)
        receiveCredits = Int(local.initialCredits)
    }

    var info: L2CAPChannelInfo {
        L2CAPChannelInfo(localCID: L2CAPChannelID(rawValue: localCID), remoteCID: L2CAPChannelID(rawValue: remoteCID),
                         spsm: spsm, local: local, peerMTU: peerMTU, peerMPS: peerMPS, isEnhanced: isEnhanced,
                         initiatedLocally: initiatedLocally)
    }

    /// K-frames waiting for credits.
    var queuedFrameCount: Int { outgoing.count }

    // MARK: Sending

    /// Segments an SDU (at most `peerMTU` octets, checked by the caller) into K-frame payloads of at most `peerMPS`
    /// octets and queues them.
    mutating func enqueue(_ data: [UInt8]) {
        let mps = max(3, Int(peerMPS))
        var first = [UInt8(truncatingIfNeeded: data.count), UInt8(truncatingIfNeeded: data.count >> 8)]
        let firstEnd = min(data.count, mps - 2)
        first.append(contentsOf: data[0..<firstEnd])
        outgoing.append(first)
        var offset = firstEnd
        while offset < data.count {
            let end = min(data.count, offset + mps)
            outgoing.append(Array(data[offset..<end]))
            offset = end
        }
    }

    /// The queued K-frame payloads the peer's credits cover now (each takes a credit).
    mutating func takeSendable() -> [[UInt8]] {
        var frames: [[UInt8]] = []
        while sendCredits > 0, let frame = outgoing.popFirst() {
            sendCredits -= 1
            frames.append(frame)
        }
        return frames
    }

    /// Adds credits from a Flow Control Credit indication; `false` when the count would pass 65535.
    mutating func addSendCredits(_ credits: UInt16) -> Bool {
        let total = sendCredits + Int(credits)
        guard total <= Int(UInt16.max) else { return false }
        sendCredits = total
        return true
    }

    /// Drops everything queued (the channel is closing).
    mutating func dropQueued() { outgoing.removeAll() }

    // MARK: Receiving

    /// Takes one K-frame payload from the peer.
    mutating func receive(_ payload: [UInt8]) -> Receipt {
        guard receiveCredits > 0 else { return .violation(.kFrameWithoutCredit) }
        receiveCredits -= 1
        guard payload.count <= Int(local.mps) else { return .violation(.kFrameExceedsMPS) }
        var data = payload[...]
        let expected: Int
        if let sduLength {
            expected = sduLength
        } else {
            guard payload.count >= 2 else { return .violation(.missingSDULength) }
            expected = Int(payload[payload.startIndex]) | Int(payload[payload.startIndex + 1]) << 8
            guard expected <= Int(local.mtu) else { return .violation(.sduExceedsMTU) }
            data = payload.dropFirst(2)
            sduLength = expected
            sdu.reserveCapacity(expected)
        }
        guard sdu.count + data.count <= expected else { return .violation(.sduLengthExceeded) }
        sdu.append(contentsOf: data)
        if returnsCreditsOnConsumption {
            currentSDUCredits += 1
        } else {
            returnable += 1
        }
        guard sdu.count == expected else {
            // The peer cannot finish this SDU without credits: release those it spent on it so far.
            if receiveCredits == 0 {
                returnable += currentSDUCredits
                currentSDUCredits = 0
            }
            return .partial
        }
        let complete = sdu
        sdu = []
        sduLength = nil
        if returnsCreditsOnConsumption {
            held.append(currentSDUCredits)
            currentSDUCredits = 0
        }
        return .sdu(complete)
    }

    /// The consumer took `count` delivered SDUs: their credits may go back (consumption mode).
    mutating func consumed(_ count: Int) {
        for _ in 0..<max(0, count) {
            guard let credits = held.popFirst() else { break }
            returnable += credits
        }
    }

    /// The credits to return to the peer now, if any. Credits go back in batches: once the peer's remaining credits
    /// fall to half of the initial grant or below, and half the grant can go at once (or nothing else is held back).
    /// With no initial credits the consumer grants every credit itself.
    mutating func creditsToReturn() -> UInt16? {
        let initial = Int(local.initialCredits)
        guard initial > 0, returnable > 0, receiveCredits <= initial / 2,
              returnable >= max(1, initial / 2) || held.isEmpty
        else { return nil }
        let grant = min(returnable, Int(UInt16.max) - receiveCredits)
        guard grant > 0 else { return nil }
        returnable -= grant
        receiveCredits += grant
        return UInt16(truncatingIfNeeded: grant)
    }

    /// Grants `credits` more to the peer; returns how many can be granted without passing 65535 in total.
    mutating func grantReceiveCredits(_ credits: UInt16) -> UInt16 {
        let grant = min(Int(credits), Int(UInt16.max) - receiveCredits)
        receiveCredits += grant
        return UInt16(truncatingIfNeeded: grant)
    }
}
