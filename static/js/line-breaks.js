// Where a subtitle line may break, as pure text rules: a line holds at most `maxChars`
// characters (a speaker's name label included) and breaks at a phrase boundary where one is
// near: after a sentence end, after a comma or colon, before a conjunction or preposition,
// never right after an article. Used by ./subtitle-state.js, which lays captions into lines;
// tested through it in real Chromium (e2e/test_subtitle_state.py).

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

/** Words of `text`; a word longer than `maxChars` (a URL, a run of CJK text) is cut into pieces. */
export function words(text, maxChars = MAX_CHARS) {
  const result = [];
  for (const word of String(text || '').split(/\s+/u)) {
    if (!word) continue;
    const chars = [...word];
    for (let i = 0; i < chars.length; i += maxChars) result.push(chars.slice(i, i + maxChars).join(''));
  }
  return result;
}

export function joinedLength(list, from = 0, to = list.length) {
  let length = 0;
  for (let i = from; i < to; i += 1) length += [...list[i].w].length + (i > from ? 1 : 0);
  return length;
}

export function labelLength(line) {
  return line.label ? [...line.label].length + 2 : 0; // "Name: "
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
  return tokens.slice(start).map((t) => t.w).join(' ');
}
