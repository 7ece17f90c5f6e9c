"""Ask before sending: parked questions, decision memory, the local decision dataset."""
