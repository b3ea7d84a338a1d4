import json, os, re, collections, sys
base='/tmp/entity-en4'
FAMS=['member_of','co_member','together','connection','relation']
existing={json.loads(l)['query'].strip().lower() for l in open(f'{base}/existing-questions.jsonl') if l.strip()}
norm=lambda s: re.sub(r'\s+',' ',s.replace('’',"'").strip().lower())
existing_n={norm(e) for e in existing}
errs=[]; ids=set(); cnt=collections.Counter(); queries=set()
lens={}
for n,line in enumerate(open(f'{base}/questions-4.jsonl'),1):
    try: o=json.loads(line)
    except Exception as e: errs.append(f'{n}: bad json {e}'); continue
    if set(o)!={'id','query','relevant','tags','split'}: errs.append(f'{n}: keys {set(o)}')
    if o.get('split')!='held_out-4': errs.append(f'{n}: split')
    t=o.get('tags')
    if not (isinstance(t,list) and len(t)==3 and t[0]=='entity' and t[1]=='en' and t[2] in FAMS): errs.append(f'{n}: tags {t}'); continue
    fam=t[2]; cnt[fam]+=1
    if not re.fullmatch(rf"en4-{fam.replace('_','-')}-\d{{3}}", o['id']): errs.append(f'{n}: id {o["id"]}')
    if o['id'] in ids: errs.append(f'{n}: dup id')
    ids.add(o['id'])
    q=o['query']
    if not isinstance(q,str) or not q.strip(): errs.append(f'{n}: empty query')
    if norm(q) in existing_n: errs.append(f'{n}: duplicates existing query')
    if norm(q) in queries: errs.append(f'{n}: duplicate query in file')
    queries.add(norm(q))
    r=o['relevant']
    if not (isinstance(r,list) and 1<=len(r)<=4): errs.append(f'{n}: relevant count')
    seen=set()
    for x in r:
        if set(x)!={'path','start_line','end_line'}: errs.append(f'{n}: rel keys'); continue
        p=f"{base}/corpus/{x['path']}"
        if not os.path.isfile(p): errs.append(f'{n}: missing {x["path"]}'); continue
        if p not in lens: lens[p]=len(open(p,encoding='utf-8').read().split('\n'))
        s,e=x['start_line'],x['end_line']
        if not (isinstance(s,int) and isinstance(e,int) and s==e): errs.append(f'{n}: start!=end or not int')
        if not (2<=s<=lens[p]): errs.append(f'{n}: line {s} out of range for {x["path"]}')
        if (x['path'],s) in seen: errs.append(f'{n}: duplicate ref')
        seen.add((x['path'],s))
# extra: at most 4 questions answered only within a single chapter, per chapter
single=collections.Counter()
for line in open(f'{base}/questions-4.jsonl'):
    o=json.loads(line); chs={x['path'] for x in o['relevant']}
    if len(chs)==1: single[chs.pop()]+=1
for ch,k in single.items():
    if k>4: errs.append(f'chapter {ch}: {k} single-chapter questions (>4)')
# warning only: lines already used by existing questions
used={}
for line in open(f'{base}/existing-questions.jsonl'):
    o=json.loads(line)
    for x in o['relevant']: used.setdefault((x['path'],x['start_line']),[]).append(o['id'])
for line in open(f'{base}/questions-4.jsonl'):
    o=json.loads(line)
    for x in o['relevant']:
        if (x['path'],x['start_line']) in used: print('WARN overlap', o['id'], x['path'], x['start_line'], used[(x['path'],x['start_line'])])
# 6-word phrase copied from an answer line
def toks(t): return re.findall(r"[a-z0-9]+", t.replace('’',"'").lower())
for line in open(f'{base}/questions-4.jsonl'):
    o=json.loads(line); qt=toks(o['query']); qg={tuple(qt[i:i+6]) for i in range(len(qt)-5)}
    for x in o['relevant']:
        lt=toks(open(f"{base}/corpus/{x['path']}",encoding='utf-8').read().split('\n')[x['start_line']-1])
        lg={tuple(lt[i:i+6]) for i in range(len(lt)-5)}
        if qg & lg: errs.append(f"{o['id']}: copies 6+ words from {x['path']}:{x['start_line']}")
print('chapters covered', len({x['path'] for l in open(f'{base}/questions-4.jsonl') for x in json.loads(l)['relevant']}))
for f in FAMS:
    if cnt[f]!=12: errs.append(f'family {f}: {cnt[f]} != 12')
print('counts',dict(cnt))
print('ERRORS' if errs else 'OK', *errs, sep='\n')
sys.exit(1 if errs else 0)
