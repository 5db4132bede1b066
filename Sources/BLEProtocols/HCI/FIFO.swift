/// A first-in first-out queue with O(1) amortised push and pop (an array with a moving head, compacted lazily).
public struct FIFO<Element: Sendable>: Sendable {
    private var storage: [Element] = []
    private var head = 0

    public init() {}

    public var count: Int { storage.count - head }
    public var isEmpty: Bool { head >= storage.count }

    public mutating func append(_ element: Element) { storage.append(element) }
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

    public mutating func removeAll() {
        storage.removeAll()
        head = 0
    }
}
