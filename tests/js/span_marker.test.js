// Unit tests of the span marker's logic (static/js/span_marker.js), with Node's built-in test
// runner: `node --test tests/js/` (make js-test). No DOM: the pure part (`core`) directly, and one
// card's marker over a tiny hand-made fake of the few DOM calls a touch selection makes.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const path = require("node:path");

const SpanMarker = require(path.join(__dirname, "..", "..", "static", "js", "span_marker.js"));
const core = SpanMarker.core;

// ---- selection to character offsets ---------------------------------------------------------

test("offsets count code points, as the server stores them, not UTF-16 units", () => {
  const text = "I 🙂 like café";
  // "🙂" is two UTF-16 units but one code point: "like" starts at code point 4, UTF-16 index 5.
  assert.equal(text.indexOf("like"), 5);
  assert.deepEqual(core.wordTokens(text), [{start: 0, end: 1}, {start: 2, end: 3}, {start: 4, end: 8},
                                           {start: 9, end: 13}]);
  assert.equal(core.codePoints(text).length, 13);
  // A DOM point inside a rendered piece starting at code point 2 ("🙂 like café"), 3 UTF-16 units in.
  assert.equal(core.pieceOffset(2, "🙂 like café", 3), 4);
  // A point on the element itself (offset counts children, not characters): the piece's start.
  assert.equal(core.pieceOffset(9, null, 1), 9);
});

test("a selection is trimmed of white space, in either direction, and empty selections are none", () => {
  const chars = core.codePoints("The cat  sat.");
  assert.deepEqual(core.trimRange(chars, 3, 9), {start: 4, end: 7}); // " cat  " -> "cat"
  assert.deepEqual(core.trimRange(chars, 9, 3), {start: 4, end: 7}); // dragged backwards
  assert.equal(core.trimRange(chars, 7, 9), null); // only spaces
  assert.equal(core.trimRange(chars, null, 4), null); // one end outside the text
  assert.deepEqual(core.trimRange(chars, 0, 99), {start: 0, end: 13}); // clamped to the text
});

test("the keyboard selects whole words from the anchor to the cursor", () => {
  const tokens = core.wordTokens("one two three four");
  assert.deepEqual(core.tokenRange(tokens, null, 1), {start: 4, end: 7});
  assert.deepEqual(core.tokenRange(tokens, 1, 3), {start: 4, end: 18});
  assert.deepEqual(core.tokenRange(tokens, 3, 1), {start: 4, end: 18}); // Shift+Left from the anchor
  assert.equal(core.tokenRange([], null, 0), null);
});

test("the text is cut where tokens, spans, suggestions and the selection begin and end", () => {
  const text = "ab cd ef";
  const points = core.cutPoints(8, [core.wordTokens(text), [{start: 1, end: 4, severity: "minor"},
    {missing: true, start: null, end: null, severity: "major"}], [], [{start: 6, end: 7}]]);
  assert.deepEqual(points, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
});

// ---- overlapping spans ------------------------------------------------------------------------

test("a new span replaces the spans it overlaps; touching spans stay", () => {
  let spans = [];
  spans = core.spansAdd(spans, {start: 0, end: 3, severity: "minor", missing: false});
  spans = core.spansAdd(spans, {start: 3, end: 6, severity: "major", missing: false}); // touches: both kept
  assert.deepEqual(spans.map((s) => [s.start, s.end]), [[0, 3], [3, 6]]);
  spans = core.spansAdd(spans, {start: 2, end: 4, severity: "critical", missing: false}); // overlaps both
  assert.deepEqual(spans.map((s) => [s.start, s.end, s.severity]), [[2, 4, "critical"]]);
  spans = core.spansAdd(spans, {start: 10, end: 12, severity: "minor", missing: false});
  spans = core.spansAdd(spans, {start: 0, end: 1, severity: "minor", missing: false});
  assert.deepEqual(spans.map((s) => s.start), [0, 2, 10]); // kept in reading order
});

test("missing-content markers never replace spans and stay last", () => {
  let spans = [{start: 0, end: 4, severity: "minor", missing: false}];
  spans = core.spansAdd(spans, {start: null, end: null, severity: "major", missing: true});
  spans = core.spansAdd(spans, {start: 5, end: 7, severity: "minor", missing: false});
  assert.deepEqual(spans.map((s) => s.missing), [false, false, true]);
  // A span over the whole text keeps the missing-content marker.
  spans = core.spansAdd(spans, {start: 0, end: 9, severity: "critical", missing: false});
  assert.deepEqual(spans.map((s) => [s.start, s.missing]), [[0, false], [null, true]]);
});

test("the piece under a span and the span at the word cursor are found", () => {
  const spans = [{start: 0, end: 5, severity: "minor"}, {start: 2, end: 3, severity: "major"},
                 {missing: true, severity: "minor"}];
  assert.equal(core.coveringIndex(spans, 2, 3, true), 1); // the last one covering it
  assert.equal(core.coveringIndex(spans, 2, 3, false), 0); // the first
  assert.equal(core.coveringIndex(spans, 5, 6, true), -1);
  assert.equal(core.overlappingIndex(spans, {start: 4, end: 8}), 0);
  assert.equal(core.overlappingIndex(spans, {start: 5, end: 8}), -1);
});

test("the answer carries offsets, or the missing flag, and the suggestion and category kept", () => {
  const answer = core.spansAnswer([{start: 1, end: 3, severity: "minor", missing: false, suggestion: 0},
                                   {start: null, end: null, severity: "major", missing: true, category: "Accuracy"}]);
  assert.deepEqual(answer, [{start: 1, end: 3, severity: "minor", suggestion: 0},
                            {missing: true, severity: "major", category: "Accuracy"}]);
});

test("a span's note (the campaign's free-text field per span) goes with it; an empty one does not", () => {
  const answer = core.spansAnswer([{start: 0, end: 2, severity: "minor", missing: false, note: "wrong term"},
                                   {start: 4, end: 6, severity: "major", missing: false, note: ""}]);
  assert.deepEqual(answer, [{start: 0, end: 2, severity: "minor", note: "wrong term"},
                            {start: 4, end: 6, severity: "major"}]);
});

test("a draft's spans that no longer fit the text are dropped", () => {
  const kept = core.spansRestore([{start: 0, end: 3}, {start: 2, end: 40}, {start: 3, end: 3}, null,
                                  {missing: true, severity: "minor"}], 10);
  assert.deepEqual(kept, [{start: 0, end: 3}, {missing: true, severity: "minor"}]);
  assert.deepEqual(core.spansRestore("not a list", 10), []);
});

// ---- right-to-left text -------------------------------------------------------------------------

test("right-to-left text keeps logical offsets and the arrows follow its direction", () => {
  const text = "שלום עולם יפה"; // Hebrew: "hello beautiful world", read right to left
  assert.deepEqual(core.wordTokens(text), [{start: 0, end: 4}, {start: 5, end: 9}, {start: 10, end: 13}]);
  // The next word (logically) is on the left: ArrowLeft moves forward, ArrowRight back.
  assert.equal(core.tokenStep("ArrowLeft", true), 1);
  assert.equal(core.tokenStep("ArrowRight", true), -1);
  assert.equal(core.tokenStep("ArrowRight", false), 1);
  assert.equal(core.tokenStep("ArrowUp", true), 0);
  // A selection made from the visual left to right in RTL text has its focus logically first.
  const chars = core.codePoints(text);
  assert.deepEqual(core.trimRange(chars, 9, 5), {start: 5, end: 9});
  // Arabic with a combining mark (shadda): offsets still count code points.
  const arabic = "مرحبًا بالعالم";
  assert.deepEqual(core.wordTokens(arabic), [{start: 0, end: 6}, {start: 7, end: 14}]);
});

// ---- touch: the selection handles, read on selectionchange ------------------------------------

// The few DOM calls a card's marker makes when built and when a touch selection changes: the
// card's text element with rendered pieces (data-s: their first code point) and no other tools.
function fakeCard(text) {
  const said = [];
  const pieces = [];
  const textNode = {
    nodeType: 1, dataset: {},
    contains: (node) => pieces.some((p) => p === node || p.firstChild === node),
    addEventListener: () => {}
  };
  const card = {
    querySelector: (selector) => (selector === "[data-esa-text]" ? textNode : null),
    querySelectorAll: () => [],
    addEventListener: () => {}
  };
  // A piece of the rendered text: an element whose text node holds `content`.
  function piece(start, content) {
    const element = {nodeType: 1, dataset: {s: String(start)}};
    element.firstChild = {nodeType: 3, textContent: content, parentNode: element};
    pieces.push(element);
    return element;
  }
  const page = {
    unit: {config: {outputs: [{id: 7, text}], severities: ["minor", "major"]}, say: (t) => said.push(t),
           changed: () => {}},
    say: (t) => said.push(t),
    setCurrent: () => {}
  };
  return {card, piece, page, said, outside: {nodeType: 3, textContent: "elsewhere", parentNode: {dataset: {}}}};
}

test("touch: the selection is read as the handles move, without a mouseup", () => {
  const text = "Das Haus ist grün.";
  const fake = fakeCard(text);
  const marker = new SpanMarker.Marker(fake.card, {id: 7, text}, 0, fake.page);
  const first = fake.piece(0, "Das Haus ").firstChild;
  const second = fake.piece(9, "ist grün.").firstChild;
  // The handles start on "Haus", then the end handle is dragged into the next piece.
  marker.selectionChanged({anchorNode: first, anchorOffset: 4, focusNode: first, focusOffset: 8});
  assert.deepEqual(marker.currentRange(), {start: 4, end: 8});
  marker.selectionChanged({anchorNode: first, anchorOffset: 4, focusNode: second, focusOffset: 8});
  assert.deepEqual(marker.currentRange(), {start: 4, end: 17});
  assert.match(fake.said[fake.said.length - 1], /Selected “Haus ist grün” in the output/);
  // The start handle dragged past the end one: the same range, the other way round.
  marker.selectionChanged({anchorNode: second, anchorOffset: 3, focusNode: first, focusOffset: 0});
  assert.deepEqual(marker.currentRange(), {start: 0, end: 12});
  // A selection reaching outside the output's text is not this marker's: the last one is kept.
  marker.selectionChanged({anchorNode: first, anchorOffset: 0, focusNode: fake.outside, focusOffset: 3});
  assert.deepEqual(marker.currentRange(), {start: 0, end: 12});
  // Only white space under the handles: nothing selected, the previous selection is kept.
  marker.selectionChanged({anchorNode: first, anchorOffset: 8, focusNode: first, focusOffset: 9});
  assert.deepEqual(marker.currentRange(), {start: 0, end: 12});
});
