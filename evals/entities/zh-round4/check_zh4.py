# Checks ../zh/questions-4.jsonl (zh round 4, English queries, Wade-Giles names): keys, split, tags,
# ids (pattern, unique), paths, lines in range / non-empty / not the heading line 1, 1-4 relevant lines,
# no duplicate queries (within the file or against rounds 1-3), no Chinese characters in the query,
# no pinyin-looking name in the query, at least 24 queries naming a person in Wade-Giles,
# at most 2 questions answered only from one chapter.
import json, os, re, collections, sys
base = os.path.dirname(os.path.abspath(__file__))
zh = os.path.normpath(os.path.join(base, '..', 'zh'))
FAMS = ['member_of', 'co_member', 'together', 'connection', 'relation']
PER_FAMILY = 6
MAX_ONLY_CHAPTER = 2
MIN_WADE_GILES = 24
CJK = re.compile(r'[\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]')
# capitalised words that look like pinyin and cannot be Wade-Giles (WG has no x, q, z, zh; writes Chia, Pao, Tai, Ts'ai ...)
PINYIN = re.compile(r"\b(?:X[a-z]+|Q[a-z]+|Zh?[a-z]+|Ji[a-z]*|Bao[a-z]*|Dai[a-z]*|Cai[a-z]*|Cui[a-z]*|Lian|Yuanchun|Mingyan|Pinger)\b")
# Wade-Giles spellings used in this round (with and without diacritics / apostrophes)
WG = ["Chia", "Pao-y", "Pao-chai", "Pao-ch'ai", "Tai-y", "Hsi-feng", "Hsi-jen", "Hsiang-y", "Hsueh", "Hsüeh",
      "Ying-erh", "Ts'ai-hsia", "Chun-yen", "Ch'un-yen", "Jui-chu", "Hsia Shou-chung", "Hsiao-lo", "Hsiao-hung",
      "Li Wan", "Ying-chun", "Ying-ch'un", "Ch'in-shih", "Ping-erh", "P'ing-erh", "Ming-yen", "Yuan-yang",
      "Yüan-yang", "Liu Lao-lao", "Ching-wen", "Ch'ing-wen", "Tan-chun", "T'an-ch'un", "Ni Erh", "Ling-kuan",
      "Liu Wu-erh", "Fang-kuan", "Lin Ju-hai", "Chin-ch'uan", "Yüan-ch'un", "Yuan-chun", "Huang Chin-ying"]
norm = lambda s: re.sub(r'[\s，。？！、,.?!：:；;“”"\'（）()\-]+', '', s.strip().lower())
existing = []
for fn in ('questions.jsonl', 'questions-2.jsonl', 'questions-3.jsonl'):
    existing += [json.loads(l) for l in open(os.path.join(zh, fn), encoding='utf-8') if l.strip()]
existing_n = {norm(e['query']) for e in existing}
existing_refs = {(r['path'], r['start_line']): e['id'] for e in existing for r in e['relevant']}
errs = []; warns = []; ids = set(); cnt = collections.Counter(); queries = set()
files = {}; only_chapter = collections.Counter(); wg_named = 0
for n, line in enumerate(open(os.path.join(zh, 'questions-4.jsonl'), encoding='utf-8'), 1):
    try: o = json.loads(line)
    except Exception as e: errs.append(f'{n}: bad json {e}'); continue
    if set(o) != {'id', 'query', 'relevant', 'tags', 'split'}: errs.append(f'{n}: keys {set(o)}'); continue
    if o['split'] != 'held_out-4': errs.append(f'{n}: split {o["split"]}')
    t = o['tags']
    if not (isinstance(t, list) and len(t) == 5 and t[:4] == ['entity', 'zh', 'crosslingual', 'wade-giles'] and t[4] in FAMS):
        errs.append(f'{n}: tags {t}'); continue
    fam = t[4]; cnt[fam] += 1
    if not re.fullmatch(rf"zh4-{fam.replace('_','-')}-\d{{3}}", o['id']): errs.append(f'{n}: id {o["id"]}')
    if o['id'] in ids: errs.append(f'{n}: dup id {o["id"]}')
    ids.add(o['id'])
    q = o['query']
    if not isinstance(q, str) or not q.strip(): errs.append(f'{n}: empty query'); continue
    if CJK.search(q): errs.append(f'{n}: Chinese characters in query: {CJK.findall(q)}')
    if PINYIN.search(q): errs.append(f'{n}: pinyin-looking name in query: {PINYIN.findall(q)}')
    if any(w in q for w in WG): wg_named += 1
    else: warns.append(f'{o["id"]}: names nobody in Wade-Giles')
    if norm(q) in existing_n: errs.append(f'{n}: duplicates an earlier-round query')
    if norm(q) in queries: errs.append(f'{n}: duplicate query in file')
    queries.add(norm(q))
    r = o['relevant']
    if not (isinstance(r, list) and 1 <= len(r) <= 4): errs.append(f'{n}: relevant count {len(r) if isinstance(r, list) else r}'); continue
    seen = set(); chs = set()
    for x in r:
        if not isinstance(x, dict) or set(x) != {'path', 'start_line', 'end_line'}: errs.append(f'{n}: rel keys'); continue
        if not re.fullmatch(r'chapter-0[0-6]\d\.txt', x['path']) or x['path'] == 'chapter-000.txt': errs.append(f'{n}: bad path {x["path"]}')
        p = os.path.join(zh, 'corpus', x['path'])
        if not os.path.isfile(p): errs.append(f'{n}: missing {x["path"]}'); continue
        if p not in files: files[p] = open(p, encoding='utf-8').read().split('\n')
        s, e = x['start_line'], x['end_line']
        if not (isinstance(s, int) and isinstance(e, int) and s == e): errs.append(f'{n}: start!=end or not int'); continue
        if s == 1: errs.append(f'{n}: line 1 is the chapter heading ({x["path"]})'); continue
        if not (2 <= s <= len(files[p])): errs.append(f'{n}: line {s} out of range for {x["path"]}'); continue
        if not files[p][s-1].strip(): errs.append(f'{n}: empty line {x["path"]}:{s}')
        if (x['path'], s) in seen: errs.append(f'{n}: duplicate ref')
        if (x['path'], s) in existing_refs: warns.append(f'{o["id"]}: line {x["path"]}:{s} also used in {existing_refs[(x["path"], s)]}')
        seen.add((x['path'], s)); chs.add(x['path'])
    if len(chs) == 1: only_chapter[next(iter(chs))] += 1
for c, k in only_chapter.items():
    if k > MAX_ONLY_CHAPTER: errs.append(f'{c}: {k} questions answered only in this chapter (>{MAX_ONLY_CHAPTER})')
for f in FAMS:
    if cnt[f] != PER_FAMILY: errs.append(f'family {f}: {cnt[f]} != {PER_FAMILY}')
if wg_named < MIN_WADE_GILES: errs.append(f'only {wg_named} queries name a person in Wade-Giles (< {MIN_WADE_GILES})')
print('counts', dict(cnt), 'total', sum(cnt.values()))
print('queries naming a person in Wade-Giles:', wg_named)
print('single-chapter questions per chapter (max):', max(only_chapter.values()) if only_chapter else 0)
print(*warns, sep='\n')
print('ERRORS' if errs else 'OK', *errs, sep='\n')
sys.exit(1 if errs else 0)
