import BLEProtocols
import BLEWire

/// The identity found (or not) behind one resolvable private address.
struct ResolvedIdentity {
    var identity: LEAddress?
}

/// LE privacy, host-based: this side's resolvable private address, its rotation, and recognising bonded peers
/// behind theirs. Core 5.4, Vol 3, Part C, 10.7 (privacy feature) and Vol 6, Part B, 1.3.2.2 (resolvable private
/// addresses); no controller resolving list is used.
///
/// With ``SecurityConfiguration/privacy`` on, advertising, scanning and connection commands use the own address type
/// random, and the controller's random address is a resolvable private address made from this side's IRK (the one
/// pairing distributes). A new one is made when ``SecurityConfiguration/privateAddressInterval`` has passed: before
/// the next advertising, scan or connection starts, or, when advertising or scanning is on, by a timer that pauses
/// them around LE Set Random Address (the controller refuses it while they are on: Core 5.4, Vol 4, Part E, 7.8.4).
extension HCIHost {
    var privacy: Bool { configuration.security.privacy }

    /// The address the next advertising, scan or connection uses: the private address with privacy on, else the
    /// identity address.
    var onAirAddress: LEAddress? { privacy ? privateAddress : ownAddress }

    // MARK: One start at a time

    /// Waits until no other advertising, scan or connection start, nor an address change, is under way.
    func lockOwnAddress() async {
        guard gap.ownAddressBusy else {
            gap.ownAddressBusy = true
            return
        }
        await withCheckedContinuation { gap.ownAddressWaiters.append($0) }
    }

    /// Lets the next waiter in (it inherits the lock).
    func unlockOwnAddress() {
        if gap.ownAddressWaiters.isEmpty {
            gap.ownAddressBusy = false
        } else {
            gap.ownAddressWaiters.removeFirst().resume()
        }
    }

    // MARK: This side's private address

    /// Privacy on: sets a new private address when none is set yet or the current one is due. Call with the lock
    /// held, before advertising, scanning or initiating starts. While a connection attempt is under way the address
    /// cannot change (the rotation timer tries again later).
    func prepareOwnAddress() async throws {
        guard privacy else { return }
        guard privateAddress == nil || (gap.addressRotation.isDue(at: now) && gap.initiatingAddress == nil) else { return }
        try await replacePrivateAddress()
    }

    /// Makes a new resolvable private address from this side's IRK and sets it with LE Set Random Address. Advertising
    /// and scanning that are on stop around the command and start again with the new address. Call with the lock
    /// held, and not while a connection attempt is under way (the controller would refuse the address).
    func replacePrivateAddress() async throws {
        guard let irk = localIdentityResolvingKey() else {
            throw HostError(.commandFailed(.leSetRandomAddress, .unspecifiedError),
                            "privacy: this side has no identity resolving key (no identity address, or the bond store fails)")
        }
        let address: LEAddress
        do {
            address = try ResolvablePrivateAddress.make(irk: irk, random: Self.secureRandom(3))
        } catch {
            throw HostError(.commandFailed(.leSetRandomAddress, .unspecifiedError), "privacy: \(error)")
        }
        let pauseAdvertising = gap.advertisingEnabled
        let pausedScan = gap.scanContinuation != nil ? gap.scanGeneration : nil
        if pauseAdvertising { _ = try? await send(HCILESetAdvertisingEnable(isEnabled: false)) }
        if pausedScan != nil { _ = try? await send(HCILESetScanEnable(isEnabled: false)) }
        var failure: (any Error)?
        do {
            _ = try await send(HCILESetRandomAddress(address: address.address))
            gap.privateAddress = address
            gap.addressRotation.didSetAddress(at: now)
            scheduleRotation(after: configuration.security.privateAddressInterval)
        } catch {
            failure = error
        }
        // Only what is still wanted starts again: a link may have ended the advertising, the user the scan.
        if let pausedScan, gap.scanContinuation != nil, gap.scanGeneration == pausedScan {
            _ = try? await send(HCILESetScanEnable(isEnabled: true, filterDuplicates: gap.scanFiltersDuplicates))
        }
        if pauseAdvertising, gap.advertisingEnabled {
            gap.advertisingAddress = onAirAddress
            do {
                _ = try await send(HCILESetAdvertisingEnable(isEnabled: true))
            } catch {
                gap.advertisingEnabled = false
                logger.warning("privacy: advertising did not start again after a new private address: \(error)")
            }
        }
        if let failure { throw failure }
    }

    /// Starts the timer that replaces the private address after `delay`.
    func scheduleRotation(after delay: Duration) {
        gap.rotationTimer?.cancel()
        gap.rotationTimer = Task { [weak self] in
            try? await Task.sleep(for: delay)
            guard !Task.isCancelled else { return }
            await self?.rotationTimerFired()
        }
    }

    /// The private address may be due: replaced now when advertising or scanning shows it; when neither is on, the
    /// next start replaces it.
    private func rotationTimerFired() async {
        guard !Task.isCancelled else { return }
        gap.rotationTimer = nil
        guard privacy, state == .poweredOn else { return }
        await lockOwnAddress()
        defer { unlockOwnAddress() }
        guard state == .poweredOn else { return }
        let current = now
        guard gap.addressRotation.isDue(at: current) else {
            if gap.rotationTimer == nil { scheduleRotation(after: gap.addressRotation.timeUntilDue(at: current)) }
            return
        }
        guard gap.advertisingEnabled || gap.scanContinuation != nil else { return }
        let retry = min(configuration.security.privateAddressInterval, .seconds(1))
        guard gap.initiatingAddress == nil else {
            // LE Set Random Address is refused while initiating: try again shortly.
            scheduleRotation(after: retry)
            return
        }
        do {
            try await replacePrivateAddress()
        } catch {
            logger.warning("privacy: could not set a new private address: \(error)")
            if state == .poweredOn { scheduleRotation(after: retry) }
        }
    }

    /// The controller was reset or is gone: it no longer has the private address, nor advertises.
    func forgetOwnAddressState() {
        gap.rotationTimer?.cancel()
        gap.rotationTimer = nil
        gap.privateAddress = nil
        gap.addressRotation = PrivateAddressRotation(interval: configuration.security.privateAddressInterval)
        gap.advertisingEnabled = false
        gap.advertisingAddress = nil
        gap.initiatingAddress = nil
    }

    // MARK: Peers' private addresses

    /// The identity address of the bonded device behind `address`, when it is a resolvable private address that one
    /// of the bonds' IRKs resolves. Results are remembered per address until the bonds change or a scan starts.
    func resolvedIdentity(of address: LEAddress) -> LEAddress? {
        guard address.type == .random, address.kind == .randomResolvable else { return nil }
        if let known = securityManager.resolvedIdentities[address] { return known.identity }
        let identity = ResolvablePrivateAddress.resolve(address, among: storedBonds().compactMap { bond in
            bond.peerIdentityResolvingKey.map { (irk: $0, value: bond.peer) }
        })
        if securityManager.resolvedIdentities.count >= 64 { securityManager.resolvedIdentities = [:] }
        securityManager.resolvedIdentities[address] = ResolvedIdentity(identity: identity)
        return identity
    }
}
