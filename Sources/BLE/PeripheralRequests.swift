import BLEHost
import BLEProtocols
import BLEWire

/// What a central did or asks of a peripheral manager, attributed to the central that sent it: the elements of the
/// one request stream, ``PeripheralManager/requests()``.
public struct PeripheralRequest: Sendable, Hashable {
    /// What the central did or asks.
    public enum Kind: Sendable, Hashable {
        /// A read or write of a characteristic (or descriptor) published with `source: .application`, for the
        /// application to answer once (see ``AttributeRequest``).
        case application(AttributeRequest)
        /// A write to a stored characteristic value or descriptor (the database holds the new value already).
        case write(characteristic: BluetoothUUID?, handle: AttributeHandle, value: [UInt8], withResponse: Bool)
        /// A central subscribed to (or unsubscribed from) a characteristic, whose value handle is `handle`.
        case subscription(characteristic: BluetoothUUID?, handle: AttributeHandle, notify: Bool, indicate: Bool)
        /// A central exchanged MTUs: the link's ATT_MTU is now this.
        case mtuChanged(Int)
    }
    /// The link of the central that sent it.
    public var central: HostConnection
    /// What the central did or asks.
    public var kind: Kind
}

extension PeripheralManager {
    /// Everything centrals do that reaches the application, each attributed to the central that sent it, in one
    /// stream: reads and writes of characteristics published with `source: .application`, to answer
    /// (``PeripheralRequest/Kind/application(_:)``); writes to stored values; subscription changes (a central whose
    /// link goes down is reported unsubscribed from everything it had subscribed to); MTU exchanges.
    ///
    /// Each call returns a stream of its own, and every open stream gets every request: the first answer to an
    /// application request is the one sent, later ones are ignored, so a stream that only watches may skip
    /// ``PeripheralRequest/Kind/application(_:)`` while another answers. While no stream is open, application
    /// requests are refused with Unlikely Error at once rather than left to time out.
    ///
    /// ```swift
    /// for await request in await manager.requests() {
    ///     switch request.kind {
    ///     case .application(let asked): await asked.respond(with: counter.next())
    ///     case .subscription(_, _, let notify, _): print(request.central.peer, notify ? "subscribed" : "left")
    ///     case .write, .mtuChanged: break
    ///     }
    /// }
    /// ```
    public func requests() async -> AsyncStream<PeripheralRequest> {
        let events = await engine.serverEvents()
        let (application, subscription) = await answers.subscribe(engine: engine)
        let engine = engine
        let answers = answers
        return AsyncStream { continuation in
            let watching = Task {
                for await e in events {
                    let database = await engine.database
                    switch e.event {
                    case .wrote(let handle, let value, let withResponse):
                        let uuid = database.attribute(handle)?.type
                        continuation.yield(PeripheralRequest(central: e.connection, kind: .write(characteristic: uuid, handle: handle, value: value,
                                                                                                withResponse: withResponse)))
                    case .subscriptionChanged(let valueHandle, let notify, let indicate):
                        continuation.yield(PeripheralRequest(central: e.connection, kind: .subscription(
                            characteristic: database.attribute(valueHandle)?.type, handle: valueHandle, notify: notify, indicate: indicate)))
                    case .mtuChanged(let mtu):
                        continuation.yield(PeripheralRequest(central: e.connection, kind: .mtuChanged(mtu)))
                    case .indicationConfirmed:
                        break
                    }
                }
                continuation.finish()
            }
            let asking = Task {
                for await request in application {
                    continuation.yield(PeripheralRequest(central: request.central, kind: .application(request)))
                }
            }
            continuation.onTermination = { _ in
                watching.cancel()
                asking.cancel()
                Task { await answers.unsubscribe(subscription) }
            }
        }
    }
}

/// Hands each application request of a peripheral manager's GATT engine to every open ``PeripheralManager/requests()``
/// stream, in the order the engine reports them, and refuses it with Unlikely Error when none is open. It is the
/// engine's one consumer of application requests from the first stream on.
actor ApplicationRequestHub {
    private var subscribers: [Int: AsyncStream<AttributeRequest>.Continuation] = [:]
    private var lastSubscription = 0
    /// Registers the hub as the engine's consumer, once.
    private var registration: Task<AsyncStream<GATTServerRequest>, Never>?
    /// Takes the engine's application requests to ``deliver(_:engine:)``.
    private var pump: Task<Void, Never>?

    /// A stream of the application requests from now on, and its subscription number for ``unsubscribe(_:)``. The
    /// hub is the engine's consumer when this returns.
    func subscribe(engine: GATTEngine) async -> (AsyncStream<AttributeRequest>, Int) {
        let (stream, continuation) = AsyncStream.makeStream(of: AttributeRequest.self)
        lastSubscription += 1
        let subscription = lastSubscription
        subscribers[subscription] = continuation
        if let registration {
            _ = await registration.value
        } else {
            let registering = Task { await engine.applicationRequests() }
            registration = registering
            let requests = await registering.value
            pump = Task { [weak self] in
                for await request in requests {
                    guard let self else { return }
                    await self.deliver(request, engine: engine)
                }
            }
        }
        return (stream, subscription)
    }

    /// Ends a stream ``subscribe(engine:)`` gave.
    func unsubscribe(_ subscription: Int) {
        subscribers.removeValue(forKey: subscription)?.finish()
    }

    private func deliver(_ request: GATTServerRequest, engine: GATTEngine) async {
        let asked = AttributeRequest(engine: engine, request: request, database: await engine.database)
        var delivered = false
        for (subscription, continuation) in subscribers {
            // A stream whose consumer is gone may not have unsubscribed yet.
            if case .terminated = continuation.yield(asked) { subscribers[subscription] = nil } else { delivered = true }
        }
        if !delivered {
            // Nobody answers for the application: the central gets Unlikely Error at once rather than a timeout.
            await engine.respond(to: request, with: .error(.unlikelyError))
        }
    }

    deinit {
        pump?.cancel()
        for continuation in subscribers.values { continuation.finish() }
    }
}
