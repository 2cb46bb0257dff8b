-- A successful iperf3 run must carry a positive throughput; anything returned here is a parser/manifest bug.
select run_id, raw_key, throughput_mbps
from {{ ref('fct_iperf3_runs') }}
where status = 'ok'
  and (throughput_mbps is null or throughput_mbps <= 0)
