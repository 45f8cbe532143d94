import express from 'express'
import { receiveSignedEvent } from './receive.js'

receiveSignedEvent(express()).then(console.log)
