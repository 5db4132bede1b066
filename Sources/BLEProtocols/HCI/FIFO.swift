/// A first-in first-out queue with O(1) amortised push and pop (an array with a moving head, compacted lazily).
public struct FIFO<Element: Sendable>: Sendable {
    private var storage: [Element] = []
    private var head = 0

    /// An empty queue.
    public init() {}

    /// The number of queued elements.
    public var count: Int { storage.count - head }
    /// Whether nothing is queued.
    public var isEmpty: Bool { head >= storage.count }

    /// Queues an element.
    public mutating func append(_ element: Element) { storage.append(element) }
    /// Queues elements in order.
    public mutating func append(contentsOf elements: some Sequence<Element>) { storage.append(contentsOf: elements) }

    /// Removes and returns the oldest element.
    public mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head >= 64, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Empties the queue.
    public mutating func removeAll() {
        storage.removeAll()
        head = 0
    }
}
