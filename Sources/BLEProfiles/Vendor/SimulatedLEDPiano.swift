/// A simulated LED piano on a peripheral manager (see ``LEDPiano``): it plays a fixed tune, one note-on or
/// note-off notification per tick (velocities from a seeded generator), records every LED frame written to it in
/// order, and refuses a malformed frame with ``LEDPiano/malformedFrameError`` (0x13 Value Not Allowed).
public actor SimulatedLEDPiano {
    /// The default advertised name.
    public static let defaultName = "SwiftBLE Piano"
    /// The notes of the tune it plays, over and over (MIDI note numbers: the opening of the "Ode to Joy").
    public static let tune: [UInt8] = [64, 64, 65, 67, 67, 65, 64, 62, 60, 60, 62, 64, 64, 62, 62]

    /// The peripheral manager underneath.
    public nonisolated let manager: PeripheralManager
    /// The advertised name.
    public nonisolated let name: String
    /// The LED frames accepted, in the order they were written.
    public private(set) var ledFrames: [PianoLEDFrame] = []
    /// The writes refused as malformed, in order.
    public private(set) var refusedWrites: [[UInt8]] = []
    /// The key messages notified to at least one central, in order.
    public private(set) var played: [MIDIMessage] = []
    /// Each key's LED mode now (all off at first), indexed by key.
    public private(set) var leds = [PianoLEDFrame.Mode](repeating: .off, count: LEDPiano.keyCount)
    private var generator: SeededGenerator
    private var step = 0
    private var tasks: [Task<Void, Never>] = []

    /// A piano on `manager` (which should publish nothing else), advertising `name`; `seed` fixes the velocities.
    /// Call ``start(tick:)``.
    public init(manager: PeripheralManager, name: String = SimulatedLEDPiano.defaultName, seed: UInt64 = 1) async {
        self.manager = manager
        self.name = name
        generator = SeededGenerator(seed: seed)
    }

    /// Publishes the piano's services, advertises its name and services (connectable, again after each connection),
    /// answers LED writes and plays a note event every `tick`.
    public func start(tick: Duration = .milliseconds(250)) async throws {
        try await manager.add(GATTServiceDefinition(uuid: LEDPiano.keyService, characteristics: [
            GATTCharacteristicDefinition(uuid: LEDPiano.keyEvents, properties: .notify, permissions: []),
        ]))
        try await manager.add(GATTServiceDefinition(uuid: LEDPiano.ledService, characteristics: [
            GATTCharacteristicDefinition(uuid: LEDPiano.ledControl, properties: .write, permissions: .writeable, source: .application),
        ]))
        let requests = await manager.requests()
        try await manager.startAdvertising(name: name, serviceUUIDs: [LEDPiano.keyService, LEDPiano.ledService], restartAfterConnection: true)
        tasks.append(Task { [weak self] in
            for await request in requests { if case .application(let asked) = request.kind { await self?.answer(asked) } }
        })
        tasks.append(Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: tick)
                guard let self, !Task.isCancelled else { return }
                await self.play()
            }
        })
    }

    /// Stops playing and answering (links stay up; the services stay published).
    public func stop() {
        for task in tasks { task.cancel() }
        tasks = []
    }

    private func answer(_ request: AttributeRequest) async {
        guard request.characteristic == LEDPiano.ledControl, case .write(let value, _) = request.kind else {
            return await request.refuse(.requestNotSupported)
        }
        do {
            let frame = try PianoLEDFrame(bytes: value)
            ledFrames.append(frame)
            leds[Int(frame.key)] = frame.mode
            await request.accept()
        } catch {
            refusedWrites.append(value)
            await request.refuse(LEDPiano.malformedFrameError)
        }
    }

    /// One tick: the next note of the tune pressed (even steps) or released (odd steps).
    private func play() async {
        let note = Self.tune[(step / 2) % Self.tune.count]
        let message: MIDIMessage = step % 2 == 0
            ? .noteOn(channel: 0, note: note, velocity: UInt8(64 + generator.next() % 60))
            : .noteOff(channel: 0, note: note, velocity: 0)
        step += 1
        if let reached = try? await manager.updateValue(message.bytes, for: LEDPiano.keyEvents), !reached.isEmpty {
            played.append(message)
        }
    }
}
