"""An analysis, not a benchmark part: what pooling the pair variance over the CNI modes of one workload variant
(a moderated t, Smyth 2004, with a fixed prior weight d0) would decide on a stored sweep, beside the one rule's
own verdicts (docs/verdicts.md). Reads the sweep's manifests from the store of `make minio` ($EDGEBENCH_S3_*).

    bench/pooled_variance.py SWEEP host   every CNI mode against the host (iperf3 throughput, DDS latency p90, HTTP p50)
    bench/pooled_variance.py SWEEP aa     an A/A sweep: each mode at its second label against its first
"""
import collections
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "containers" / "runner" / "src"))
from edgebench.results.store import S3Config
from edgebench.results import verdict as V
KEY={'http':('response_p50_ms',False,'ms'),'dds':('latency_p90_us',False,'us'),'iperf3':('throughput_mbps',True,'Mbit/s')}
cfg = S3Config.from_env(); c = cfg.client()
def load(sweep, summary_only=True):
    vals=collections.defaultdict(dict)
    for o in c.list_objects(cfg.bucket, prefix=f"runs/{sweep}/", recursive=True):
        if not o.object_name.endswith("manifest.json"): continue
        m = json.loads(c.get_object(cfg.bucket, o.object_name).read())
        if m["status"]!="ok": continue
        w=m['workload']; k=KEY.get(w)
        if not k or k[0] not in m['metrics']: continue
        if w=='dds' and m['metrics'].get('latency_p90_us') is None: continue
        var=(w,m.get('protocol'),m.get('path'),m.get('placement'),m.get('length_bytes'),json.dumps(m.get('params'),sort_keys=True) if w!='dds' else '')
        label=m['cni']+':'+str(m.get('cni_mode'))+':'+str(m.get('requested_version') or '')
        vals[var][label]=vals[var].get(label,{}); vals[var][label][m['repetition']]=m['metrics'][k[0]]
    return vals
def judge(vals, base_of, d0=None, pool='none'):
    out=collections.Counter(); fam=collections.Counter()
    for var, cells in vals.items():
        k=KEY[var[0]]; margin=V.margin_pct(V.family_of_unit(k[2]))
        comps=[]
        for label,r in cells.items():
            b=base_of(label, cells)
            if b is None: continue
            h=cells[b]; reps=sorted(set(r)&set(h))
            if len(reps)<2: continue
            d=[r[i]-h[i] for i in reps]; hm=statistics.fmean(h[i] for i in reps)
            comps.append((label, d, hm))
        if not comps: continue
        s2=[statistics.variance([x/hm for x in d]) for _,d,hm in comps]  # relative variance
        dfs=[len(d)-1 for _,d,_ in comps]
        s0=statistics.fmean(s2)  # pooled (equal df)
        dpool=sum(dfs)
        for (label,d,hm),v,df in zip(comps,s2,dfs):
            n=len(d); mean=statistics.fmean(d)
            if pool=='none': s2m, dft = v, df
            elif pool=='full': s2m, dft = s0, dpool
            else: s2m, dft = (d0*s0+df*v)/(d0+df), min(d0+df, dpool)
            ci=V.t95(dft)*math.sqrt(s2m)*hm/math.sqrt(n)
            verdict=V.decide(mean, ci, n, n, hm, k[1], margin)
            out[verdict]+=1; fam[(var[0], verdict in V.DECISIVE)]+=1
    return out, fam
if __name__=='__main__':
    sweep=sys.argv[1]; mode=sys.argv[2]
    vals=load(sweep)
    if mode=='host':
        base=lambda label,cells: next((l for l in cells if l.startswith('host:')),None) if not label.startswith('host:') else None
    else:  # A/A: label x:y:vA against x:y:vB (the first version)
        def base(label,cells):
            same=sorted(l for l in cells if l.rsplit(':',1)[0]==label.rsplit(':',1)[0])
            return same[0] if len(same)==2 and label==same[1] else None
    for pool,d0 in (('none',None),('mod',2),('mod',4),('mod',8),('full',None)):
        o,f=judge(vals, base, d0, pool)
        tot=sum(o.values()); dec=sum(v for k,v in o.items() if k in V.DECISIVE)
        print(f"{pool:5} d0={d0}: decisive {dec}/{tot} {dict(o)}", {w: f"{f[(w,True)]}/{f[(w,True)]+f[(w,False)]}" for w in ('iperf3','dds','http')})
