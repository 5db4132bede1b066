import BLEWire

/// Advertising, scanning, connection establishment and ACL transport on the simulated air.
/// Core 5.4, Vol 6, Part B, 4.4 (advertising/scanning/initiating states) and 4.5 (connection state).
extension World {
    static let advertisingDelayMaxNanos: UInt64 = 10_000_000
    static let highDutyDirectedIntervalNanos: UInt64 = 3_750_000
    static let highDutyDirectedTimeoutNanos: UInt64 = 1_280_000_000

    /// Starts (or restarts) a controller's advertising events.
    mutating func startAdvertising(_ id: Int) {
        guard var c = controllers[id] else { return }
        c.advertising.isEnabled = true
        c.advertising.generation = token()
        c.advertising.started = now
        controllers[id] = c
        queue.schedule(.advertise(controller: id, generation: c.advertising.generation), at: now)
    }

    mutating func stopAdvertising(_ id: Int) {
        guard controllers[id] != nil else { return }
        let stale = token()
        controllers[id]?.advertising.isEnabled = false
        controllers[id]?.advertising.generation = stale
    }

    /// One advertising event of controller `id`: every controller in range that scans gets a report (and, scanning
    /// actively, a scan response); a matching initiator connects.
    mutating func advertisingEvent(controller id: Int, generation: UInt64) {
        guard let advertiser = controllers[id], advertiser.advertising.isEnabled, advertiser.advertising.generation == generation,
              !advertiser.removed, let (address, addressType) = advertiser.ownAddress(advertiser.advertising.parameters.ownAddressType)
        else { return }
        let params = advertiser.advertising.parameters
        let type = params.advertisingType

        if type == .connectableDirectedHighDuty, now - advertiser.advertising.started >= Self.highDutyDirectedTimeoutNanos {
            stopAdvertising(id)
            emitConnectionComplete(id, HCILEConnectionCompleteEvent(status: .advertisingTimeout, handle: 0, role: .peripheral,
                                                                    peerAddressType: params.peerAddressType, peerAddress: params.peerAddress,
                                                                    connectionInterval: 0, peripheralLatency: 0, supervisionTimeout: 0))
            return
        }

        // Every listener in range hears the same PDU. Scanners report it; the first initiator (in controller order)
        // that hears it and wants this advertiser answers with CONNECT_IND, after which the advertiser stops.
        var initiator: (central: Int, request: HCILECreateConnection)?
        for other in listeners() where other != id {
            guard let listener = controllers[other], !listener.removed,
                  listener.scanning.isEnabled || listener.initiating.connection != nil else { continue }
            if type.isDirected {
                // Directed advertising is only for the peer it names.
                let targetsListener = [LEAddressType.public, .random].contains { t in
                    listener.ownAddress(t).map { $0.0 == params.peerAddress && $0.1.isRandom == params.peerAddressType.isRandom } ?? false
                }
                guard targetsListener else { continue }
            }
            guard let rssi = sampleRSSI(from: id, to: other) else { continue }

            // Legacy advertising is on LE 1M: an initiator or scanner must listen there.
            if initiator == nil, let pending = listener.initiating.connection, type.isConnectable, pending.peerAddress == address,
               pending.peerAddressType.isRandom == addressType.isRandom, listener.initiating.phys.contains(.le1M),
               listenerHearsInWindow(pending.scanInterval, pending.scanWindow) {
                initiator = (other, listener.initiating.extendedConnection.flatMap { Self.legacyRequest($0, on: .le1M) } ?? pending)
                continue
            }
            if listener.scanning.isEnabled, let duty = listener.scanning.dutyCycle(on: .le1M), listenerHearsInWindow(duty.interval, duty.window) {
                let eventType: HCILEAdvertisingReportEventType = switch type {
                case .connectableUndirected: .advInd
                case .scannableUndirected: .advScanInd
                case .nonConnectableUndirected: .advNonconnInd
                default: .advDirectInd
                }
                report(to: other, eventType: eventType, address: address, addressType: addressType,
                       data: type.isDirected ? [] : advertiser.advertising.data, rssi: rssi)
                if duty.active, type.isScannable,
                   let responseRSSI = sampleRSSI(from: id, to: other) {
                    report(to: other, eventType: .scanResponse, address: address, addressType: addressType,
                           data: advertiser.advertising.scanResponseData, rssi: responseRSSI)
                }
            }
        }
        if let initiator {
            connect(central: initiator.central, peripheral: id, request: initiator.request,
                    peripheralAddress: (address, addressType))
            return   // The advertiser is now connected and no longer advertising.
        }

        let next: UInt64
        if type == .connectableDirectedHighDuty {
            next = Self.highDutyDirectedIntervalNanos
        } else {
            next = UInt64(params.intervalMin) * 625_000 + rng.next() % (Self.advertisingDelayMaxNanos + 1)
        }
        queue.schedule(.advertise(controller: id, generation: generation), at: now + next)
    }

    /// Whether a scanner with this duty cycle happens to listen during an advertising event.
    ///
    /// Simplified duty cycle: with `window == interval` the scanner always listens; otherwise each advertising
    /// event is heard with probability `window / interval`, drawn from the air's seeded generator (no phase
    /// tracking between scan windows and advertising events).
    mutating func listenerHearsInWindow(_ interval: UInt16, _ window: UInt16) -> Bool {
        guard window < interval, interval > 0 else { return true }
        return rng.next() % UInt64(interval) < UInt64(window)
    }

    /// Sends one advertising report to a scanner's host.
    ///
    /// Duplicate filtering (LE Set Scan Enable, Filter_Duplicates = 1) keys on (address, address type, event type):
    /// one ADV_* report and one SCAN_RSP report per advertiser until scanning is enabled again. New advertising
    /// data from the same address is filtered too (Core 5.4, Vol 6, Part B, 4.4.3.5 leaves the comparison of data
    /// to the implementation; this controller does not compare it).
    ///
    /// A scanner that scans with the extended commands gets an LE Extended Advertising Report with the legacy bit and
    /// the PDU's properties (Core 5.4, Vol 4, Part E, 7.7.65.13: ADV_IND 0b0010011, ADV_DIRECT_IND 0b0010101,
    /// ADV_SCAN_IND 0b0010010, ADV_NONCONN_IND 0b0010000, SCAN_RSP to ADV_IND 0b0011011, to ADV_SCAN_IND 0b0011010).
    mutating func report(to scanner: Int, eventType: HCILEAdvertisingReportEventType, address: BluetoothAddress,
                         addressType: LEAddressType, data: [UInt8], rssi: Int8, scannedConnectable: Bool = true) {
        guard var s = controllers[scanner] else { return }
        if s.scanning.filterDuplicates {
            let key = ControllerState.DuplicateKey(address: address, addressType: addressType.rawValue,
                                                   eventType: UInt16(eventType.rawValue))
            guard s.scanning.reported.insert(key).inserted else { return }
            controllers[scanner] = s
        }
        if s.scanning.isExtended {
            let bits: UInt16 = switch eventType {
            case .advInd: 0b0010011
            case .advDirectInd: 0b0010101
            case .advScanInd: 0b0010010
            case .scanResponse: scannedConnectable ? 0b0011011 : 0b0011010
            default: 0b0010000
            }
            let report = HCILEExtendedAdvertisingReportEvent.Report(eventType: HCILEExtendedAdvertisingEventType(rawValue: bits),
                                                                    addressType: addressType, address: address, primaryPHY: 1,
                                                                    secondaryPHY: 0, rssi: rssi, data: data)
            if emit(scanner, HCILEExtendedAdvertisingReportEvent(reports: [report]).packet) { controllers[scanner]?.scanning.reportCount += 1 }
            return
        }
        let report = HCILEAdvertisingReportEvent.Report(eventType: eventType, addressType: addressType, address: address,
                                                        data: data, rssi: rssi)
        if emit(scanner, HCILEAdvertisingReportEvent(reports: [report]).packet) { controllers[scanner]?.scanning.reportCount += 1 }
    }

    /// Establishes a link: both hosts get LE Connection Complete; the advertiser stops advertising.
    ///
    /// A connection made on an advertising set (`advertisingSet`) ends that set only, and its host hears LE Advertising
    /// Set Terminated after LE Connection Complete; the link starts on `phy` both ways. Core 5.4, Vol 4, Part E, 7.7.65.18.
    mutating func connect(central: Int, peripheral: Int, request: HCILECreateConnection,
                          peripheralAddress: (BluetoothAddress, LEAddressType), advertisingSet: UInt8? = nil, phy: LEPHY = .le1M) {
        guard var c = controllers[central], var p = controllers[peripheral],
              let centralAddress = c.ownAddress(request.ownAddressType) else { return }
        let centralHandle = c.allocateHandle(in: handlesInUse(by: central))
        let peripheralHandle = p.allocateHandle(in: handlesInUse(by: peripheral))
        c.initiating.connection = nil
        c.initiating.extendedConnection = nil
        let completedEvents = advertisingSet.flatMap { p.advertising.sets[$0]?.events } ?? 0
        if let advertisingSet {
            p.advertising.sets[advertisingSet]?.isEnabled = false
            p.advertising.sets[advertisingSet]?.generation = token()
        } else {
            p.advertising.isEnabled = false
            p.advertising.generation = token()
        }
        controllers[central] = c
        controllers[peripheral] = p
        listenerCache = nil
        let id = nextLinkID
        nextLinkID += 1
        var link = Link(id: id, central: .init(controller: central, handle: centralHandle),
                        peripheral: .init(controller: peripheral, handle: peripheralHandle),
                        interval: request.connectionIntervalMax, latency: request.maxLatency,
                        timeout: request.supervisionTimeout)
        // Each side starts with its suggested maximum TX octets (LE Write Suggested Default Data Length).
        link.centralTxOctets = c.hci.suggestedTxOctets
        link.peripheralTxOctets = p.hci.suggestedTxOctets
        link.centralPHY = phy
        link.peripheralPHY = phy
        links[id] = link
        emitConnectionComplete(central, HCILEConnectionCompleteEvent(handle: centralHandle, role: .central,
                                                                     peerAddressType: peripheralAddress.1, peerAddress: peripheralAddress.0,
                                                                     connectionInterval: link.interval, peripheralLatency: link.latency,
                                                                     supervisionTimeout: link.timeout))
        emitConnectionComplete(peripheral, HCILEConnectionCompleteEvent(handle: peripheralHandle, role: .peripheral,
                                                                        peerAddressType: centralAddress.1, peerAddress: centralAddress.0,
                                                                        connectionInterval: link.interval, peripheralLatency: link.latency,
                                                                        supervisionTimeout: link.timeout))
        if let advertisingSet {
            emit(peripheral, HCILEAdvertisingSetTerminatedEvent(handle: advertisingSet, connectionHandle: peripheralHandle,
                                                                completedEvents: UInt8(clamping: completedEvents)).packet)
        }
        // Suggested defaults above 27 octets: the controllers run the Data Length Update procedure at once.
        if link.centralTxOctets != 27 || link.peripheralTxOctets != 27 { dataLengthChanged(link) }
        startConnectionEvents(link: id)
    }

    // MARK: ACL

    /// A host handed its controller an ACL packet: check flow control, then send it over the link.
    ///
    /// A packet longer than the buffer size, or one for which no buffer is free (the host sent more than
    /// Total_Num_LE_ACL_Data_Packets without waiting for Number Of Completed Packets), is dropped and answered with
    /// Data Buffer Overflow (link type ACL). A packet for a handle that is not connected is dropped and counted
    /// (``VirtualAir/droppedACLPacketCount``).
    mutating func hostACL(from id: Int, _ packet: HCIACLPacket) {
        guard let found = controllers.withValue(forKey: id, { c in
            c.removed ? nil : (size: c.configuration.aclBufferSize, free: c.hci.aclInFlight < c.configuration.aclBufferCount)
        }), let room = found else { return }
        guard let linkID = linkID(controller: id, handle: packet.handle) else {
            droppedACLPackets += 1
            return
        }
        guard packet.data.count <= room.size, room.free else {
            // The host ignored LE Read Buffer Size: the packet is lost. Core 5.4, Vol 4, Part E, 7.7.26.
            emit(id, HCIDataBufferOverflowEvent(linkType: 0x01).packet)
            return
        }
        controllers.withValue(forKey: id) { $0.hci.aclInFlight += 1 }
        if airTime != nil, var link = links[linkID] {
            // Under the air-time model the packet waits for the connection events.
            link.air[link.central.controller == id ? 0 : 1].packets.append(packet)
            links[linkID] = link
            return
        }
        transmitACL(link: linkID, from: id, packet)
    }

    /// Moves one host packet across the link, re-fragmenting it to the receiver's buffer size, and returns the
    /// sender's buffer with Number Of Completed Packets. Out of reach, the packet waits in the sender's buffer.
    mutating func transmitACL(link id: Int, from sender: Int, _ packet: HCIACLPacket) {
        // The usual case, read in place (a copy of the link retains its queues): no faults on the air, nothing of this
        // sender's in transit, the peer in reach: the packet gets across now.
        if faults.isEmpty, let receiver = links.withValue(forKey: id, { link -> Int? in
            guard link.side(of: sender) != nil, let receiver = link.peer(of: sender), receiver.active, !link.supervisionArmed,
                  !link.inTransit.contains(where: { $0.0 == sender }) else { return nil }
            return receiver.controller
        }) ?? nil, canHearInPlace(sender, receiver) {
            deliverACL(link: id, from: sender, packet)
            return
        }
        guard var link = links[id], link.side(of: sender) != nil, let receiver = link.peer(of: sender) else { return }
        guard receiver.active, !link.supervisionArmed, canHearInPlace(sender, receiver.controller) else {
            link.stalled.append((sender, packet))
            links[id] = link
            return
        }
        // Faults: the attempts that fail before one gets through, each a connection event later. Packets already in
        // transit from this sender go first.
        let pair = [min(sender, receiver.controller), max(sender, receiver.controller)]
        var retries = 0
        if var state = faults[pair] {
            let p = state.faults.successProbability
            let attempts = max(1, Int(link.supervisionTimeoutNanos / max(1, link.intervalNanos)))
            while retries < attempts, !(p > 0 && Double(state.rng.next() >> 11) / Double(1 << 53) < p) { retries += 1 }
            faults[pair] = state
            if retries == attempts {
                // Nothing got through within the supervision timeout: the link is lost.
                retransmissions += retries
                linksLostToFaults += 1
                link.stalled.append((sender, packet))
                link.lostToFaults = true
                if !link.supervisionArmed {
                    link.supervisionArmed = true
                    link.supervisionGeneration &+= 1
                    queue.schedule(.supervision(link: id, generation: link.supervisionGeneration), at: now + link.supervisionTimeoutNanos)
                }
                links[id] = link
                return
            }
        }
        if retries > 0 || link.inTransit.contains(where: { $0.0 == sender }) {
            retransmissions += retries
            let at = max(now, link.busyUntil[sender] ?? 0) + UInt64(retries) * link.intervalNanos
            link.busyUntil[sender] = at
            link.inTransit.append((sender, packet))
            links[id] = link
            queue.schedule(.deliverACL(link: id, sender: sender), at: at)
            return
        }
        deliverACL(link: id, from: sender, packet)
    }

    /// Hands a packet that got across the link to the receiver's host, re-fragmented to its buffer size, and returns
    /// the sender's buffer with Number Of Completed Packets (the packet was acknowledged).
    mutating func deliverACL(link id: Int, from sender: Int, _ packet: HCIACLPacket) {
        // Read in place: a copy of the link would retain its queues.
        guard let found = links.withValue(forKey: id, { link -> (Link.Side, Link.Side, Bool)? in
            guard let senderSide = link.side(of: sender), let receiver = link.peer(of: sender) else { return nil }
            return (senderSide, receiver, link.supervisionArmed)
        }) ?? nil else { return }
        let (senderSide, receiver, supervisionArmed) = found
        guard receiver.active, !supervisionArmed, canHearInPlace(sender, receiver.controller) else {
            links[id]?.stalled.append((sender, packet))
            return
        }
        let size = max(1, controllers.withValue(forKey: receiver.controller) { $0.configuration.aclBufferSize } ?? 27)
        var offset = 0
        repeat {
            let end = min(offset + size, packet.data.count)
            let boundary: HCIACLPacket.Boundary = offset == 0 && packet.boundary.isStart ? .firstFlushable : .continuing
            // A packet that fits the receiver's buffer crosses as it is (no copy of its data).
            let data = offset == 0 && end == packet.data.count ? packet.data : Array(packet.data[offset..<end])
            emitACL(receiver.controller, HCIACLPacket(handle: receiver.handle, boundary: boundary, data: data))
            offset = end
        } while offset < packet.data.count
        controllers.withValue(forKey: sender) { $0.hci.aclInFlight -= 1 }
        emit(sender, HCINumberOfCompletedPacketsEvent(entries: [.init(handle: senderSide.handle, completedPackets: 1)]).packet)
    }
}
