import BLEProtocols
import BLEWire

/// Scanning, advertising, connection setup and this side's own address.
struct GAPDriver {
    var scanContinuation: AsyncThrowingStream<AdvertisementReport, any Error>.Continuation?
    var scanGeneration = 0
    var pendingConnection: CheckedContinuation<HostConnection, any Error>?
    var initiating = false
    var earlyConnection: Result<HostConnection, any Error>?
    var connectionTimedOut = false
    var connectionAbandoned = false
    var initiatingPeer: LEAddress?
    var addressRotation: PrivateAddressRotation
    var rotationTimer: Task<Void, Never>?
    var advertisingEnabled = false
    var advertisingAddress: LEAddress?
    var initiatingAddress: LEAddress?
    var scanFiltersDuplicates = false
    var ownAddressBusy = false
    var ownAddressWaiters: [CheckedContinuation<Void, Never>] = []
    var lastPHYWaiter = 0
    var privateAddress: LEAddress?

    init(privateAddressInterval: Duration) {
        addressRotation = PrivateAddressRotation(interval: privateAddressInterval)
    }
}
