import BLEProtocols
import BLEWire

/// An established link's GAP procedures: disconnection, connection parameter updates (either role), PHY and data
/// length. Core 5.4, Vol 3, Part C, and Vol 6, Part B, 5.1.
extension HCIHost {
    /// Disconnects `connection`'s link, if it is still up (never a newer link that got its handle); the reason is 0x13,
    /// Remote User Terminated Connection, unless given.
    ///
    /// HCI Disconnect goes once the controller completed the ACL data the host had queued on the link when it was
    /// called (a controller that disconnects discards what it still holds), or after
    /// ``Configuration/disconnectTimeout`` (5 s by default), whichever comes first; a cancelled caller stops waiting.
    /// Returns how that wait ended: ``DeliveryOutcome/completed``, or with the packets not confirmed (then the link was
    /// disconnected anyway; a warning is logged), or ``DeliveryOutcome/linkClosed(unconfirmedPackets:)`` when the link
    /// went down meanwhile (nothing left to disconnect). Throws when the link is already down, or the controller
    /// refuses the command.
    @discardableResult
    public func disconnect(_ connection: HostConnection, reason: HCIStatus = .remoteUserTerminatedConnection) async throws -> DeliveryOutcome {
        guard current(connection.handle, is: connection.link) else { throw HostError(.notConnected, "\(connection.link) is down") }
        let outcome = await awaitDelivery(on: connection.handle, timeout: configuration.disconnectTimeout)
        guard current(connection.handle, is: connection.link) else {
            return .linkClosed(unconfirmedPackets: outcome.unconfirmedPackets)
        }
        if outcome != .completed {
            logger.warning("\(connection.link): disconnecting with \(outcome.unconfirmedPackets) ACL packet(s) not completed by the controller")
        }
        _ = try await send(HCIDisconnect(handle: connection.handle, reason: reason))
        return outcome
    }

    /// Asks the controller to change a link's parameters (central role).
    public func updateConnection(_ connection: HostConnection, intervalMin: UInt16, intervalMax: UInt16, latency: UInt16,
                                 supervisionTimeout: UInt16) async throws {
        guard current(connection.handle, is: connection.link) else { throw HostError(.notConnected, "\(connection.link) is down") }
        _ = try await send(HCILEConnectionUpdate(handle: connection.handle, intervalMin: intervalMin, intervalMax: intervalMax,
                                                 maxLatency: latency, supervisionTimeout: supervisionTimeout))
    }

    /// Changes a link's connection parameters as its central (LE Connection Update) and returns the link once LE
    /// Connection Update Complete reports the new ones: an interval in `interval` (1.25 ms units, 0x0006…0x0C80),
    /// `latency` connection events the peripheral may skip, `supervisionTimeout` in 10 ms units. Core 5.4, Vol 4,
    /// Part E, 7.8.18 and 7.7.65.3.
    ///
    /// - Throws: ``HostError``: `commandFailed` when the controller refuses the command or the procedure fails (its
    ///   status), `notConnected` when the link drops first.
    public func updateConnectionParameters(_ connection: HostConnection, interval: ClosedRange<UInt16>, latency: UInt16,
                                           supervisionTimeout: UInt16) async throws -> HostConnection {
        let handle = connection.handle
        guard current(handle, is: connection.link) else { throw HostError(.notConnected, "\(connection.link) is down") }
        let id = links.newWaiterID()
        // The waiter is in place before the command goes out.
        return try await withCheckedThrowingContinuation { continuation in
            links[handle]?.updateWaiters[id] = continuation
            Task {
                do {
                    _ = try await self.send(HCILEConnectionUpdate(handle: handle, intervalMin: interval.lowerBound,
                                                                  intervalMax: interval.upperBound, maxLatency: latency,
                                                                  supervisionTimeout: supervisionTimeout))
                } catch {
                    self.failUpdateWaiter(id, on: handle, error)
                }
            }
        }
    }

    /// Asks the central, as the link's peripheral, for new connection parameters (L2CAP Connection Parameter Update
    /// Request, Core 5.4, Vol 3, Part A, 4.20) and returns the link once the central applies them (LE Connection Update
    /// Complete). The central chooses: it may apply other values, or none.
    ///
    /// - Throws: ``HostError``: `connectionParameterUpdateRefused` when the central rejects the request, does not
    ///   answer within the signaling timeout, or the procedure fails; `notConnected` when the link drops first;
    ///   `l2cap` when this side is not the link's peripheral or the values are out of range.
    public func requestConnectionParameters(_ connection: HostConnection, interval: ClosedRange<UInt16>, latency: UInt16,
                                            supervisionTimeout: UInt16) async throws -> HostConnection {
        let handle = connection.handle
        guard current(handle, is: connection.link) else { throw HostError(.notConnected, "\(connection.link) is down") }
        let request = L2CAPConnectionParameterUpdateRequest(intervalMin: interval.lowerBound, intervalMax: interval.upperBound,
                                                            latency: latency, timeout: supervisionTimeout)
        let requested = links.update(handle) { link -> Result<[L2CAPChannelManager.Action], L2CAPError> in
            Result { () throws(L2CAPError) in try link.l2cap.requestConnectionParameterUpdate(request) }
        }
        let actions: [L2CAPChannelManager.Action]
        switch requested {
        case .success(let requestActions)?: actions = requestActions
        case .failure(let error)?: throw HostError(.l2cap(error.code), error.reason)
        case nil: throw HostError(.notConnected, "\(connection.link) is down")
        }
        let id = links.newWaiterID()
        return try await withCheckedThrowingContinuation { continuation in
            links[handle]?.updateWaiters[id] = continuation
            performL2CAP(actions, handle: handle)
        }
    }

    /// LE Connection Update was refused: that call fails, the others waiting on the link go on waiting.
    private func failUpdateWaiter(_ id: Int, on handle: ConnectionHandle, _ error: any Error) {
        links[handle]?.updateWaiters.removeValue(forKey: id)?.resume(throwing: error)
    }

    /// Ends every wait for a connection update on a link, with the link or an error.
    func finishUpdateWaiters(on handle: ConnectionHandle, _ result: Result<HostConnection, any Error>) {
        guard let waiters = links[handle]?.updateWaiters.values, !waiters.isEmpty else { return }
        links[handle]?.updateWaiters = [:]
        for waiter in waiters { waiter.resume(with: result) }
    }

    /// Asks the link layer to move a link to the PHYs preferred for each direction (LE Set PHY) and returns the link
    /// once the PHY Update procedure ends (LE PHY Update Complete): each direction on the fastest PHY both sides
    /// accept, or unchanged. Empty sets mean no preference. Either side may ask. Core 5.4, Vol 4, Part E, 7.8.49.
    ///
    /// PHYs the controller does not support (``ControllerCapabilities/phys``) are left out of the preferences.
    ///
    /// - Throws: ``HostError``; ``HostErrorCode/unsupportedByController(_:)`` when the controller lacks LE Set PHY,
    ///   or every PHY asked for in a direction (`.twoMegabitPHY`, `.codedPHY`), without sending anything.
    public func setPHY(_ connection: HostConnection, transmit: LEPHYs, receive: LEPHYs) async throws -> HostConnection {
        let handle = connection.handle
        guard current(handle, is: connection.link) else { throw HostError(.notConnected, "\(connection.link) is down") }
        let capabilities = controller.capabilities
        let usable = capabilities.allows(.leSetPHY) ? capabilities.phys : .le1M
        for asked in [transmit, receive] where !asked.isEmpty && asked.isDisjoint(with: usable) {
            throw capabilities.unsupported(asked.contains(.le2M) ? .twoMegabitPHY : asked.contains(.leCoded) ? .codedPHY : .phyUpdate)
        }
        guard capabilities.allows(.leSetPHY) else { throw capabilities.unsupported(.phyUpdate) }
        let (transmit, receive) = (transmit.intersection(usable), receive.intersection(usable))
        let allPHYs: UInt8 = (transmit.isEmpty ? 0x01 : 0) | (receive.isEmpty ? 0x02 : 0)
        let id = links.newWaiterID()
        // The waiter is in place before the command goes out: the update may complete right after its Command Status.
        return try await withCheckedThrowingContinuation { continuation in
            links[handle]?.phyWaiters[id] = continuation
            Task {
                do {
                    _ = try await self.send(HCILESetPHY(handle: handle, allPHYs: allPHYs, txPHYs: transmit, rxPHYs: receive))
                } catch {
                    self.failPHYWaiter(id, on: handle, error)
                }
            }
        }
    }

    /// LE Set PHY was refused: that call fails, the others waiting on the link go on waiting.
    private func failPHYWaiter(_ id: Int, on handle: ConnectionHandle, _ error: any Error) {
        links[handle]?.phyWaiters.removeValue(forKey: id)?.resume(throwing: error)
    }

    /// Asks the link layer to send link-layer packets of up to `octets` payload octets (27…251) on a link (LE Set Data
    /// Length); the link's ``HostConnection/maxTxOctets`` follows when the controller reports the change. Larger packets
    /// carry the same data in fewer packets and less air time. Core 5.4, Vol 4, Part E, 7.8.33.
    ///
    /// - Throws: ``HostError``; ``HostErrorCode/unsupportedByController(_:)`` (`.dataLengthExtension`) when the
    ///   controller does not list LE Set Data Length, without sending anything: links then keep 27-octet packets.
    public func setDataLength(_ connection: HostConnection, octets: UInt16 = 251) async throws {
        guard current(connection.handle, is: connection.link) else { throw HostError(.notConnected, "\(connection.link) is down") }
        guard controller.capabilities.supports(.dataLengthExtension) else { throw controller.capabilities.unsupported(.dataLengthExtension) }
        let handle = connection.handle
        let octets = min(251, max(27, octets))
        // TX time for `octets` on LE Coded (S=8) is beyond the 0x4290 cap; the controller takes the cap.
        let time = UInt16(min(0x4290, (Int(octets) + 14) * 8 * 8 + 336))
        _ = try await send(HCILESetDataLength(handle: handle, txOctets: octets, txTime: max(0x0148, time)))
    }

    /// The links up now.
    public var connections: [HostConnection] { links.connections }
}
