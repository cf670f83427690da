// Where a subtitle line may break, as pure text rules: a line holds at most `maxChars`
// columns (a speaker's name label included) and breaks at a phrase boundary where one is
// near: after a sentence end, after a comma or colon, before a conjunction or preposition,
// never right after an article. Used by ./subtitle-state.js, which lays captions into lines;
// tested through it in real Chromium (e2e/test_subtitle_state.py).
//
// Columns: a Latin letter takes one, a kanji, kana or hangul syllable two (about as wide on
// screen), so a line holds about 21 of them. Japanese and Chinese put no spaces between
// words: their text breaks between words as the browser's dictionary finds them
// (`Intl.Segmenter`; else between any two characters), never before a closing mark or small
// kana nor after an opening mark, and no space is put between two words where either side is
// such a character. Korean keeps its spaces.

export const MAX_CHARS = 42;

const SENTENCE_END = /[.!?…。！？]["'”’»)\]]*$/u;
const CLAUSE_END = /[,;:–—、，；：]["'”’»)\]]*$/u;
const EDGE_PUNCTUATION = /^[("'“‘«¿¡[]+|[)"'”’».,;:!?…\]]+$/gu;

// Words a line may break before (conjunctions, relative pronouns, prepositions) and words it
// must not end on (articles, possessives), in the languages the project offers most.
const BREAK_BEFORE = new Set(`
  and but or nor so yet because since although though unless until while whereas that which who
  whom whose when where if than to of in on at for with from by about as into onto like through
  after before over between against during without within under around among across
  y e o u pero sino porque aunque que cuando donde si de del en con por para sin sobre entre hasta
  et ou mais donc car parce lorsque quand où si de du des en dans avec pour par sans sur sous chez
  und oder aber denn weil obwohl dass wenn wo ob von mit für bei nach aus zu über unter zwischen
  e ou mas porque quando onde se de do da em no na com por para sem sobre entre até
  e o ma perché quando dove se di del della in con per tra fra su senza
`.split(/\s+/).filter(Boolean));

const NO_BREAK_AFTER = new Set(`
  a an the my your his her its our their this these those some any no every each
  el la los las un una unos unas mi tu su sus nuestro nuestra
  le la les un une des mon ma mes ton ta tes son sa ses notre votre leur leurs ce cet cette ces
  der die das den dem des ein eine einen einem einer mein meine dein deine sein seine ihr ihre
  o a os as um uma uns umas meu minha seu sua
  il lo gli i le uno una mio mia suo sua
`.split(/\s+/).filter(Boolean));

function bare(word) {
  return word.replace(EDGE_PUNCTUATION, '').toLowerCase();
}

/** How good a break is between `before` and `after` (higher is better; 0 must be avoided). */
export function breakScore(before, after) {
  if (SENTENCE_END.test(before)) return 4;
  if (CLAUSE_END.test(before)) return 3;
  if (NO_BREAK_AFTER.has(bare(before))) return 0;
  if (after !== undefined && BREAK_BEFORE.has(bare(after))) return 2;
  return 1;
}

// Scripts written without spaces between words, and the wide characters among all scripts.
const UNSPACED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u3000-\u303f\uff01-\uff60]/u;
const WIDE = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3000-\u303f\uff01-\uff60\uffe0-\uffe6]/u;
// No line starts with these (they close what comes before) nor ends with the openers.
const NO_LINE_START = new Set('、。，．・：；？！）」』】〕〉》”’ーぁぃぅぇぉっゃゅょゎァィゥェォッャュョヮヵヶ…‥'
  + '.,;:!?)]}%');
const NO_LINE_END = new Set('（「『【〔〈《“‘([{');

/** Columns `text` takes on a line. */
export function textWidth(text) {
  let width = 0;
  for (const char of String(text)) width += WIDE.test(char) ? 2 : 1;
  return width;
}

/** Whether two words written one after the other take a space between them. */
export function spaced(before, after) {
  return !UNSPACED.test([...before].pop() || '') && !UNSPACED.test([...after][0] || '');
}

/** `list` of words as the text of one line. */
export function joinWords(list) {
  let text = '';
  list.forEach((word, i) => {
    text += i > 0 && spaced(list[i - 1], word) ? ` ${word}` : word;
  });
  return text;
}

// Word boundaries in text without spaces (ICU's dictionary, in every current browser); where
// there is none, each character is a word.
const SEGMENTER = typeof Intl.Segmenter === 'function'
  ? new Intl.Segmenter(undefined, { granularity: 'word' }) : null;

function segments(piece) {
  if (SEGMENTER) return Array.from(SEGMENTER.segment(piece), (s) => s.segment);
  return [...piece];
}

/** A piece of text without spaces as words (a dictionary's, else each character), with the
 * marks that may not be parted from them: a closing mark or small kana stays with the word
 * before it, an opening mark with the word after it. */
function splitUnspaced(piece) {
  const pieces = [];
  let opening = '';
  for (const segment of segments(piece)) {
    const last = pieces.length - 1;
    const first = [...segment][0];
    if ([...segment].every((char) => NO_LINE_END.has(char))) {
      opening += segment;
    } else if (last >= 0 && opening === '' && NO_LINE_START.has(first)) {
      pieces[last] += segment;
    } else {
      pieces.push(opening + segment);
      opening = '';
    }
  }
  if (opening) {
    if (pieces.length) pieces[pieces.length - 1] += opening;
    else pieces.push(opening);
  }
  return pieces;
}

/** Cut `word` into pieces of at most `maxChars` columns (most words fit whole). */
function cut(word, maxChars) {
  if (word.length <= maxChars / 2 || textWidth(word) <= maxChars) return [word];
  const pieces = [''];
  let width = 0; // of the last piece
  for (const char of word) {
    const wide = textWidth(char);
    if (width > 0 && width + wide > maxChars) {
      pieces.push('');
      width = 0;
    }
    pieces[pieces.length - 1] += char;
    width += wide;
  }
  return pieces;
}

/** Words of `text`; text without spaces (Japanese, Chinese) is cut between its characters, and
 * a word wider than `maxChars` (a URL) into pieces. */
export function words(text, maxChars = MAX_CHARS) {
  const result = [];
  for (const piece of String(text || '').split(/\s+/u)) {
    if (!piece) continue;
    const parts = UNSPACED.test(piece) ? splitUnspaced(piece) : [piece];
    for (const part of parts) result.push(...cut(part, maxChars));
  }
  return result;
}

/** Columns the words `list[from .. to)` (tokens `{w}`) take on one line. */
export function joinedLength(list, from = 0, to = list.length) {
  let length = 0;
  for (let i = from; i < to; i += 1) {
    length += textWidth(list[i].w) + (i > from && spaced(list[i - 1].w, list[i].w) ? 1 : 0);
  }
  return length;
}

export function labelLength(line) {
  return line.label ? textWidth(line.label) + 2 : 0; // "Name: "
}

/**
 * Where to break a line whose words are `line` when `incoming` does not fit after them: how
 * many words stay. Words before `sealed` stay whatever the score (they were shown already).
 */
export function chooseBreak(line, incoming, sealed, maxChars, label = 0) {
  let best = line.length;
  let bestScore = breakScore(line[line.length - 1].w, incoming);
  for (let keep = line.length - 1; keep >= Math.max(sealed, 1); keep -= 1) {
    if (label + joinedLength(line, 0, keep) < maxChars / 2) break;
    const score = breakScore(line[keep - 1].w, line[keep].w);
    if (score > bestScore) {
      best = keep;
      bestScore = score;
    }
  }
  return best;
}

/** The newest of `tokens` that fit in `room` characters, as text (the last one, cut, if even
 * it does not fit). */
export function newestThatFit(tokens, room) {
  let start = tokens.length - 1;
  if (start < 0) return '';
  while (start > 0 && joinedLength(tokens, start - 1) <= room) start -= 1;
  return joinWords(tokens.slice(start).map((t) => t.w));
}
