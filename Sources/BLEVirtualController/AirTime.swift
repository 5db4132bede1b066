import BLEWire

/// An opt-in model of the time packets take on a connection, so that throughput and latency come out as on a radio.
///
/// Without it (the default) a host's ACL packet crosses the air the instant the controller takes it. With it, each
/// link runs connection events, one every connection interval from the link's first anchor. In an event the central
/// and the peripheral take turns — a central packet, 150 µs (T_IFS), the peripheral's, 150 µs — each sending the next
/// part of its oldest host packet, or an empty packet when it has nothing. A data channel PDU carries at most the
/// sender's maximum TX octets (27 until LE Set Data Length or the suggested default raise it, at most 251) and takes
/// the time its bits need on the link's PHY in that direction (LE 1M, LE 2M or LE Coded, after LE Set PHY). The
/// event goes on while either side announced more data (the MD bit) and another exchange of the largest packets
/// still ends before the next anchor; then the link is quiet until that anchor. A packet reaches the peer's host when
/// its last bit arrives; the sender's host gets its buffer back (Number Of Completed Packets) when the peer's next
/// packet acknowledges the last part. Core 5.4, Vol 6, Part B, 2.1, 2.4, 4.5.1 and 4.5.6; Part A, 3.2.
///
/// ``LinkFaults`` apply per packet: a lost or corrupted packet is sent again in the next exchange (the link layer's
/// acknowledgement scheme), and a link where nothing gets through for its supervision timeout is lost.
///
/// Not modelled: peripheral latency (the peripheral listens at every event), the connection event length limits
/// controllers impose, channel selection and interference, and the time limits (Max_TX_Time) of data length.
public struct AirTimeModel: Sendable, Hashable {
    /// The coding used on LE Coded.
    public enum Coding: Sendable, Hashable {
        /// S=2: 500 kb/s.
        case s2
        /// S=8: 125 kb/s.
        case s8
    }

    /// The inter frame space between two packets of an event: 150 µs. Core 5.4, Vol 6, Part B, 4.1.1.
    public static let interFrameSpaceMicroseconds = 150

    /// The coding of LE Coded packets (S=8 by default, as with PHY_Options 0 or 2).
    public var coding: Coding

    /// Creates a model.
    public init(coding: Coding = .s8) {
        self.coding = coding
    }

    /// The time on air, in µs, of one data channel PDU with `payload` octets (0 for an empty packet) on `phy`; an
    /// encrypted link adds a 4-octet MIC to every non-empty payload.
    ///
    /// LE 1M: 1-octet preamble, 4-octet access address, 2-octet header, payload, MIC, 3-octet CRC, 8 µs per octet.
    /// LE 2M: the same with a 2-octet preamble, 4 µs per octet. LE Coded: 80 µs preamble, the access address, coding
    /// indicator and TERM1 at S=8 (256 + 16 + 24 µs), then header, payload, MIC, CRC and TERM2 at S=8 or S=2.
    public func packetMicroseconds(payload: Int, phy: LEPHY, encrypted: Bool = false) -> Int {
        let mic = encrypted && payload > 0 ? 4 : 0
        let body = 2 + payload + mic + 3
        switch phy {
        case .le2M: return (2 + 4 + body) * 8 / 2
        case .leCoded:
            let perBit = coding == .s8 ? 8 : 2
            return 80 + 256 + 16 + 24 + body * 8 * perBit + 3 * perBit
        default: return (1 + 4 + body) * 8
        }
    }

    /// The exchanges one connection event of `interval` (1.25 ms units) holds when both sides keep sending:
    /// `centralOctets`-octet packets from the central, `peripheralOctets`-octet ones back, each direction on its PHY.
    /// The central starts another exchange only while its next packet and the longest packet the peripheral may send
    /// (`peripheralMaximumOctets`, by default `peripheralOctets`) still end before the next anchor.
    public func exchangesPerEvent(interval: UInt16, centralOctets: Int, centralPHY: LEPHY, peripheralOctets: Int,
                                  peripheralPHY: LEPHY, peripheralMaximumOctets: Int? = nil, encrypted: Bool = false) -> Int {
        let central = packetMicroseconds(payload: centralOctets, phy: centralPHY, encrypted: encrypted)
        let exchange = central + packetMicroseconds(payload: peripheralOctets, phy: peripheralPHY, encrypted: encrypted)
            + 2 * Self.interFrameSpaceMicroseconds
        let reserved = central + packetMicroseconds(payload: peripheralMaximumOctets ?? peripheralOctets, phy: peripheralPHY,
                                                    encrypted: encrypted) + 2 * Self.interFrameSpaceMicroseconds
        let intervalMicroseconds = Int(interval) * 1250
        guard intervalMicroseconds >= reserved else { return 1 }
        return (intervalMicroseconds - reserved) / exchange + 1
    }

    /// Which way the data flows, for ``ceilingBitsPerSecond(octets:payloadPerPacket:phy:reversePHY:interval:encrypted:direction:)``.
    public enum Direction: Sendable, Hashable {
        /// Notifications: full packets from the peripheral, empty ones from the central.
        case peripheralToCentral
        /// Writes: full packets from the central; the peripheral answers with empty packets but may send up to its
        /// maximum TX octets, which the central reserves time for.
        case centralToPeripheral(peripheralMaximumOctets: Int)
    }

    /// The most payload per second one direction of a link can carry, in bits per second: full `octets`-octet packets
    /// one way, empty ones back, as many exchanges per event as fit; `payloadPerPacket` is the part of each packet
    /// that counts (for ATT notifications at MTU 247 over 251-octet packets: 244, the L2CAP and ATT headers apart).
    /// With `interval` nil: events that never end (the PHY's ceiling).
    public func ceilingBitsPerSecond(octets: Int, payloadPerPacket: Int, phy: LEPHY, reversePHY: LEPHY? = nil,
                                     interval: UInt16? = nil, encrypted: Bool = false,
                                     direction: Direction = .peripheralToCentral) -> Double {
        let back = reversePHY ?? phy
        let exchange = packetMicroseconds(payload: octets, phy: phy, encrypted: encrypted)
            + packetMicroseconds(payload: 0, phy: back) + 2 * Self.interFrameSpaceMicroseconds
        guard let interval else { return Double(payloadPerPacket * 8) / (Double(exchange) / 1_000_000) }
        let perEvent: Int
        switch direction {
        case .peripheralToCentral:
            perEvent = exchangesPerEvent(interval: interval, centralOctets: 0, centralPHY: back, peripheralOctets: octets,
                                         peripheralPHY: phy, encrypted: encrypted)
        case .centralToPeripheral(let peripheralMaximum):
            perEvent = exchangesPerEvent(interval: interval, centralOctets: octets, centralPHY: phy, peripheralOctets: 0,
                                         peripheralPHY: back, peripheralMaximumOctets: peripheralMaximum, encrypted: encrypted)
        }
        return Double(perEvent * payloadPerPacket * 8) / (Double(interval) * 1250 / 1_000_000)
    }
}

/// One direction of a link under the air-time model: the host packets its sender's controller holds.
struct AirQueue {
    /// Host ACL packets not yet sent whole, oldest first.
    var packets: [HCIACLPacket] = []
    /// Octets of the oldest packet already sent and acknowledged.
    var offset = 0
    /// Packets sent whole whose acknowledgement has not arrived yet (their buffers are still the controller's).
    var unacknowledged = 0

    /// The next PDU's payload (at most `octets`) and whether it starts a host packet that starts an L2CAP PDU; `nil`
    /// when there is nothing to send.
    func nextPart(octets: Int) -> (bytes: ArraySlice<UInt8>, starts: Bool)? {
        guard let head = packets.first else { return nil }
        let end = min(head.data.count, offset + max(1, octets))
        return (head.data[offset..<end], offset == 0 && head.boundary.isStart)
    }

    /// Whether anything is left once the next `octets`-octet part is sent.
    func hasMore(afterSending octets: Int) -> Bool {
        guard let head = packets.first else { return false }
        return packets.count > 1 || offset + octets < head.data.count
    }

    /// Marks `count` octets of the oldest packet sent; returns whether that packet is now sent whole.
    mutating func sent(_ count: Int) -> Bool {
        guard let head = packets.first else { return false }
        offset += count
        guard offset >= head.data.count else { return false }
        packets.removeFirst()
        offset = 0
        unacknowledged += 1
        return true
    }

    /// Buffers the sender's host gets back when the queue is flushed (the link went down).
    var heldBuffers: Int { packets.count + unacknowledged }
}

extension World {
    /// The first connection event of a new link, one interval after the connection was established (the transmit
    /// window is not modelled).
    mutating func startConnectionEvents(link id: Int) {
        guard airTime != nil, var link = links[id] else { return }
        link.airGeneration = token()
        link.lastHeard = now
        links[id] = link
        queue.schedule(.connectionEvent(link: id, generation: link.airGeneration), at: now + link.intervalNanos)
    }

    /// A connection event's anchor: the next one is scheduled, then the first exchange runs.
    mutating func connectionEvent(link id: Int, generation: UInt64) {
        guard let link = links[id], link.airGeneration == generation, link.central.active || link.peripheral.active else { return }
        let next = now + link.intervalNanos
        queue.schedule(.connectionEvent(link: id, generation: generation), at: next)
        guard link.central.active, link.peripheral.active else { return }
        // Faults: nothing received for the supervision timeout loses the link. Core 5.4, Vol 6, Part B, 4.5.2.
        let pair = [min(link.central.controller, link.peripheral.controller), max(link.central.controller, link.peripheral.controller)]
        if faults[pair] != nil, now - link.lastHeard >= link.supervisionTimeoutNanos {
            linksLostToFaults += 1
            for side in [link.central, link.peripheral] {
                closeSide(link: id, controller: side.controller, reason: .connectionTimeout)
            }
            return
        }
        exchange(link: id, generation: generation, nextAnchor: next)
    }

    /// One exchange of a connection event: a central packet, T_IFS, the peripheral's packet, T_IFS.
    mutating func exchange(link id: Int, generation: UInt64, nextAnchor: UInt64) {
        guard let model = airTime, var link = links[id], link.airGeneration == generation,
              link.central.active, link.peripheral.active, !link.supervisionArmed,
              canHear(link.central.controller, link.peripheral.controller) else { return }
        let centralOctets = Int(min(link.centralTxOctets, 251))
        let peripheralOctets = Int(min(link.peripheralTxOctets, 251))
        let fromCentral = link.air[0].nextPart(octets: centralOctets)
        let fromPeripheral = link.air[1].nextPart(octets: peripheralOctets)
        let centralTime = UInt64(model.packetMicroseconds(payload: fromCentral?.bytes.count ?? 0, phy: link.centralPHY,
                                                          encrypted: link.encrypted)) * 1000
        let peripheralTime = UInt64(model.packetMicroseconds(payload: fromPeripheral?.bytes.count ?? 0, phy: link.peripheralPHY,
                                                             encrypted: link.encrypted)) * 1000
        let space = UInt64(AirTimeModel.interFrameSpaceMicroseconds) * 1000
        let centralArrives = now + centralTime
        let peripheralArrives = centralArrives + space + peripheralTime
        let end = peripheralArrives + space

        let centralThrough = attemptSucceeds(link)
        let peripheralThrough = attemptSucceeds(link)
        if centralThrough || peripheralThrough { link.lastHeard = now }
        // The central's packet is acknowledged by the peripheral's reply; the peripheral's by the central's next packet.
        let moreFromCentral = transmit(fromCentral, on: &link, id: id, direction: 0, through: centralThrough,
                                       arrives: centralArrives, acknowledged: peripheralArrives)
        let moreFromPeripheral = transmit(fromPeripheral, on: &link, id: id, direction: 1, through: peripheralThrough,
                                          arrives: peripheralArrives, acknowledged: end)
        links[id] = link
        // Another exchange only if the central's next packet and the longest the peripheral may send end in time.
        let centralNext = link.air[0].nextPart(octets: centralOctets)?.bytes.count ?? 0
        let reserved = UInt64(model.packetMicroseconds(payload: centralNext, phy: link.centralPHY, encrypted: link.encrypted)
            + model.packetMicroseconds(payload: peripheralOctets, phy: link.peripheralPHY, encrypted: link.encrypted)) * 1000 + 2 * space
        if moreFromCentral || moreFromPeripheral, end + reserved <= nextAnchor {
            queue.schedule(.airExchange(link: id, generation: generation, nextAnchor: nextAnchor), at: end)
        }
    }

    /// One side's packet of an exchange (`direction` 0: the central's): delivered when its last bit `arrives` if it got
    /// `through`, its host packet's buffer returned when `acknowledged` once sent whole; a packet that did not get
    /// through stays first in line. Returns whether that side has more to send (its MD bit).
    mutating func transmit(_ part: (bytes: ArraySlice<UInt8>, starts: Bool)?, on link: inout Link, id: Int,
                           direction: Int, through: Bool, arrives: UInt64, acknowledged: UInt64) -> Bool {
        guard let part else { return !link.air[direction].packets.isEmpty }
        let more = link.air[direction].hasMore(afterSending: through ? part.bytes.count : 0)
        guard through else {
            retransmissions += 1
            return more
        }
        let (sender, receiver) = direction == 0 ? (link.central.controller, link.peripheral.controller)
                                                : (link.peripheral.controller, link.central.controller)
        queue.schedule(.airDeliver(link: id, receiver: receiver, data: Array(part.bytes), starts: part.starts), at: arrives)
        if link.air[direction].sent(part.bytes.count) {
            queue.schedule(.airAcknowledge(link: id, sender: sender), at: acknowledged)
        }
        return more
    }

    /// Whether one packet on `link` gets through its ``LinkFaults`` (always, without faults).
    mutating func attemptSucceeds(_ link: Link) -> Bool {
        let pair = [min(link.central.controller, link.peripheral.controller), max(link.central.controller, link.peripheral.controller)]
        guard var state = faults[pair] else { return true }
        let p = state.faults.successProbability
        let through = p > 0 && Double(state.rng.next() >> 11) / Double(1 << 53) < p
        faults[pair] = state
        return through
    }

    /// A PDU's last bit reached `receiver`: its host gets the data, in ACL packets of its buffer size.
    mutating func airDeliver(link id: Int, receiver: Int, data: [UInt8], starts: Bool) {
        guard let link = links[id], let side = link.side(of: receiver), side.active else { return }
        let size = max(1, controllers[receiver]?.configuration.aclBufferSize ?? 27)
        var offset = 0
        repeat {
            let end = min(offset + size, data.count)
            let boundary: HCIACLPacket.Boundary = offset == 0 && starts ? .firstFlushable : .continuing
            emitACL(receiver, HCIACLPacket(handle: side.handle, boundary: boundary, data: Array(data[offset..<end])))
            offset = end
        } while offset < data.count
    }

    /// The peer acknowledged the last part of one of `sender`'s host packets: the buffer goes back to its host.
    mutating func airAcknowledge(link id: Int, sender: Int) {
        guard var link = links[id], let side = link.side(of: sender), side.active else { return }
        let direction = sender == link.central.controller ? 0 : 1
        guard link.air[direction].unacknowledged > 0 else { return }
        link.air[direction].unacknowledged -= 1
        links[id] = link
        controllers.withValue(forKey: sender) { $0.hci.aclInFlight -= 1 }
        emit(sender, HCINumberOfCompletedPacketsEvent(entries: [.init(handle: side.handle, completedPackets: 1)]).packet)
    }

    /// The model was turned off with a packet sent but not acknowledged yet: its buffer goes back now.
    mutating func airAcknowledgeFlushed(link id: Int, sender: Int) {
        guard let link = links[id], let side = link.side(of: sender), side.active else { return }
        controllers.withValue(forKey: sender) { $0.hci.aclInFlight -= 1 }
        emit(sender, HCINumberOfCompletedPacketsEvent(entries: [.init(handle: side.handle, completedPackets: 1)]).packet)
    }

    /// The packets `controller`'s host had queued on the link are dropped with its side of the link.
    mutating func flushAirQueue(_ link: inout Link, controller: Int) -> Int {
        let direction = controller == link.central.controller ? 0 : 1
        let held = link.air[direction].heldBuffers
        link.air[direction] = AirQueue()
        return held
    }
}
