import sys
c,l=int(sys.argv[1]),int(sys.argv[2])
t=open(f'corpus/chapter-{c:03d}.txt',encoding='utf-8').read().split('\n')[l-1]
print(f'--- {c}:{l} ({len(t)}c)'); print(t[:int(sys.argv[3]) if len(sys.argv)>3 else 1500])
